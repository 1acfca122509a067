package tts_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts"
)

// chunks is an Audio that returns its samples a few at a time, then end
// (io.EOF or another error), and counts its Close calls.
type chunks struct {
	pcm    []int16
	step   int
	end    error
	closed int
}

func (c *chunks) Read(p []int16) (int, error) {
	if len(c.pcm) == 0 {
		return 0, c.end
	}
	n := copy(p[:min(len(p), c.step)], c.pcm)
	c.pcm = c.pcm[n:]
	return n, nil
}

func (c *chunks) Close() error { c.closed++; return nil }

func TestReadAll(t *testing.T) {
	want := make([]int16, 10000)
	for i := range want {
		want[i] = int16(i)
	}
	a := &chunks{pcm: want, step: 333, end: io.EOF}
	got, err := tts.ReadAll(a)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, 1, a.closed)

	broken := errors.New("synthesis failed")
	b := &chunks{pcm: want[:500], step: 100, end: broken}
	got, err = tts.ReadAll(b)
	require.ErrorIs(t, err, broken)
	require.Equal(t, want[:500], got, "what came before the error")
	require.Equal(t, 1, b.closed)
}
