package tts_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/codecs/resample"
)

// loopAudio replays src forever, in reads of at most 700 samples; Close
// counts.
type loopAudio struct {
	src    []int16
	off    int
	limit  int // samples before io.EOF; 0 for never
	served int
	closes int
}

func (l *loopAudio) Read(p []int16) (int, error) {
	if l.limit > 0 && l.served >= l.limit {
		return 0, io.EOF
	}
	n := min(len(p), 700, len(l.src)-l.off)
	if l.limit > 0 {
		n = min(n, l.limit-l.served)
	}
	copy(p, l.src[l.off:l.off+n])
	l.off = (l.off + n) % len(l.src)
	l.served += n
	return n, nil
}

func (l *loopAudio) Close() error { l.closes++; return nil }

func TestResampleAlignsAndReleases(t *testing.T) {
	src := &loopAudio{src: tone24k(24000), limit: 24000}
	r, err := resample.New(24000, 16000, resample.QualityHigh)
	require.NoError(t, err)
	var released *resample.Resampler
	a := tts.Resample(src, r, func(r *resample.Resampler) { released = r })
	var out []int16
	buf := make([]int16, 1) // one sample at a time: the worst reader
	for {
		n, err := a.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	require.Len(t, out, 16000)
	require.InDelta(t, 16384, amplitudeAt(out, 440, 16000), 30)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	require.Same(t, r, released)
	require.Equal(t, 1, src.closes)
	_, err = a.Read(buf)
	require.ErrorIs(t, err, tts.ErrClosed)
}

func TestResampleReadDoesNotAllocate(t *testing.T) {
	r, err := resample.New(24000, 16000, resample.QualityHigh)
	require.NoError(t, err)
	a := tts.Resample(&loopAudio{src: tone24k(24000)}, r, nil)
	defer a.Close()
	buf := make([]int16, 320)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := a.Read(buf); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
