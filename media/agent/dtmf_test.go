package agent

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media"
)

// keyTones renders digits as in-band DTMF at 16 kHz: 100 ms tones 60 ms
// apart, each tone's peak at -16 dBFS, as a browser's microphone would
// carry a keypad next to it.
func keyTones(digits string) []int16 {
	low := map[rune]float64{'1': 697, '2': 697, '3': 697, '4': 770, '5': 770, '6': 770, '7': 852, '8': 852, '9': 852, '*': 941, '0': 941, '#': 941}
	high := map[rune]float64{'1': 1209, '4': 1209, '7': 1209, '*': 1209, '2': 1336, '5': 1336, '8': 1336, '0': 1336, '3': 1477, '6': 1477, '9': 1477, '#': 1477}
	var out []int16
	for _, d := range digits {
		for i := range 1600 {
			t := float64(i) / 16000
			out = append(out, int16(5181*(math.Sin(2*math.Pi*low[d]*t)+math.Sin(2*math.Pi*high[d]*t))))
		}
		out = append(out, make([]int16, 960)...)
	}
	return out
}

// feed writes pcm to s in caller frames.
func feed(t *testing.T, s *Session, pcm []int16) {
	for i := 0; i+callerFrame <= len(pcm); i += callerFrame {
		require.NoError(t, s.WriteFrame(pcm[i:i+callerFrame]))
	}
}

// TestInbandDTMF: with Config.InbandDTMF a session reports the keys of
// tones in the caller's audio as DTMF events, in order and numbered, and
// the tones start no turn; the caller's speech before them still does,
// and yields no key. Without it no key is reported.
func TestInbandDTMF(t *testing.T) {
	checkGoroutines(t)
	speech := loadWAV(t, "caller16k.wav")
	silence := make([]int16, 16000)
	for _, on := range []bool{true, false} {
		k := newSink()
		s, err := New(Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), InbandDTMF: on}, nil,
			Deps{LLM: &fakeLLM{}, STT: &fakeSTT{answers: []string{"hello"}}, TTS: &fakeTTS{}}, k)
		require.NoError(t, err)
		feed(t, s, silence)
		feed(t, s, speech)
		feed(t, s, silence)
		if on {
			waitFor[SpeechStopped](t, k, nil)
			require.Zero(t, count[DTMF](k), "speech is no key")
		}
		turns := count[SpeechStarted](k)
		feed(t, s, keyTones("1#90*"))
		feed(t, s, silence)
		if !on {
			time.Sleep(100 * time.Millisecond)
			require.Zero(t, count[DTMF](k))
			s.Close()
			continue
		}
		waitFor[DTMF](t, k, func(d DTMF) bool { return d.Seq == 5 })
		var got string
		for i, e := range k.all() {
			if d, ok := e.(DTMF); ok {
				got += string(d.Digit)
				require.Equal(t, len(got), d.Seq, "event %d", i)
				require.False(t, d.At.IsZero())
			}
		}
		require.Equal(t, "1#90*", got)
		require.Equal(t, turns, count[SpeechStarted](k), "the tones started no turn: %s", kinds(k.all()))
		s.Close()
	}
}

// BenchmarkInputFrameDTMF is the session's whole input path per caller
// frame (speech detection, turn detection, buffer) on speech and silence,
// without and with in-band DTMF detection: the difference is the
// detector's cost. (On key tones the two differ in behaviour, not only
// cost: without the detector the tones make turns.)
func BenchmarkInputFrameDTMF(b *testing.B) {
	pcm := append(loadWAV(b, "caller16k.wav"), make([]int16, 16000)...)
	n := len(pcm) / callerFrame
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			s, err := New(Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), InbandDTMF: on}, nil,
				Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{}}, newSink())
			require.NoError(b, err)
			defer s.Close()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f := i % n
				if err := s.WriteFrame(pcm[f*callerFrame : (f+1)*callerFrame]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
