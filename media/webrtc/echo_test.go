package webrtc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// tone fills f with a 440 Hz sine of amplitude amp at 16 kHz, frame i.
func tone(f []int16, i int, amp float64) {
	for k := range f {
		f[k] = int16(amp * math.Sin(2*math.Pi*440*float64(i*len(f)+k)/16000))
	}
}

func TestEchoPlaysEachTurnBack(t *testing.T) {
	e, err := NewEcho(16000)
	require.NoError(t, err)
	var turns []int
	e.OnTurn = func(ms int) { turns = append(turns, ms) }
	in, out := make([]int16, 320), make([]int16, 320)
	voicedOut, firstOut := 0, -1
	for i := range 200 {
		switch {
		case i < 10: // quiet before the turn
			clear(in)
		case i < 40: // a 600 ms turn
			tone(in, i, 8000)
		default:
			clear(in)
		}
		require.NoError(t, e.WriteFrame(in))
		e.ReadFrame(out)
		if rms(out) > 1000 {
			voicedOut++
			if firstOut < 0 {
				firstOut = i
			}
			tone(in, i, 8000) // the caller's mic picks the echo up: it must not be recorded
		}
	}
	require.Equal(t, []int{600}, turns, "one turn, trailing quiet dropped")
	require.Equal(t, 30, voicedOut, "the whole turn comes back once")
	require.Equal(t, 40+echoHangover-1, firstOut, "playback starts when the hangover ends")
	require.ErrorIs(t, e.WriteFrame(make([]int16, 10)), ErrFrameSize)
	_, err = NewEcho(44100)
	require.Error(t, err)
}

func TestEchoCapsLongTurns(t *testing.T) {
	e, err := NewEcho(16000)
	require.NoError(t, err)
	var turns []int
	e.OnTurn = func(ms int) { turns = append(turns, ms) }
	in := make([]int16, 320)
	for i := range echoMaxTurn + 5 {
		tone(in, i, 8000)
		require.NoError(t, e.WriteFrame(in))
	}
	require.Equal(t, []int{10000}, turns)
}

func rms(f []int16) float64 {
	var s float64
	for _, v := range f {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(f)))
}

func TestEchoAllocatesNothing(t *testing.T) {
	e, err := NewEcho(16000)
	require.NoError(t, err)
	in, out := make([]int16, 320), make([]int16, 320)
	i := 0
	allocs := testing.AllocsPerRun(500, func() {
		tone(in, i, float64(8000*(i/40%2)))
		_ = e.WriteFrame(in)
		e.ReadFrame(out)
		i++
	})
	require.Zero(t, allocs)
}
