package agent

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/prefetch"
)

// TestHotLists: after a caller frame the input list names the input
// state, the buffer's end where the next frame goes, the processor, the
// turn detector and the recording chunk's line for the caller's next
// frame; the output list names the playout pointer and the recording's
// line for the agent's next frame.
func TestHotLists(t *testing.T) {
	s, err := New(Config{Loopback: true, InputRate: media.Rate8k, OutputRate: media.Rate8k,
		RecordPath: filepath.Join(t.TempDir(), "call.wav"), TurnDetection: serverVAD()}, nil, Deps{}, newSink())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	frame := make([]int16, media.SamplesPerFrame(media.Rate8k))
	out := make([]int16, len(frame))
	for range 3 {
		require.NoError(t, s.WriteFrame(frame))
		s.ReadFrame(out)
	}
	var in, o prefetch.List
	s.InputLines().AddHot(&in)
	s.OutputLines().AddHot(&o)
	if !prefetch.Enabled {
		require.Empty(t, in.Addrs())
		require.Empty(t, o.Addrs())
		return
	}
	r := s.rec
	next := func(side int) uintptr {
		return prefetch.Addr(&r.cur[int(r.pos[side]-r.base)*r.pair])
	}
	require.NotNil(t, s.in.det)
	for name, a := range map[string]uintptr{
		"input":       prefetch.Addr(&s.in),
		"buffer end":  prefetch.Addr(&s.in.buf[:len(s.in.buf)+1][len(s.in.buf)]),
		"processor":   prefetch.Addr(s.in.dsp),
		"detector":    prefetch.Addr(s.in.det),
		"recorder":    prefetch.Addr(&r.mu),
		"caller next": next(recCaller),
	} {
		require.True(t, in.Has(a), "input: %s not listed", name)
	}
	for name, a := range map[string]uintptr{
		"playout":    prefetch.Addr(&s.play),
		"recorder":   prefetch.Addr(&r.pos),
		"agent next": next(recAgent),
	} {
		require.True(t, o.Has(a), "output: %s not listed", name)
	}
}
