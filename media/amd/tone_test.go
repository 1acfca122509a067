package amd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/media/amd/amdtest"
)

func TestToneDetect(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		var tn tone
		tn.init(rate)
		n := rate / 50
		for _, tc := range []struct {
			freq float64
			db   float64
			want bool
		}{
			{400, -20, true}, {440, -30, true}, {1000, -10, true}, {1400, -40, true}, {2000, -20, true},
			{300, -20, false}, {2300, -20, false}, {1000, -50, false},
		} {
			pcm := amdtest.Tone(tc.freq, 100*time.Millisecond, tc.db, rate)
			mu := make([]byte, len(pcm))
			g711.EncodeULawTo(mu, pcm)
			g711.DecodeULawTo(pcm, mu)
			// A frame in the middle, away from the ramps.
			f, ok := tn.detect(pcm[2*n : 3*n])
			require.Equal(t, tc.want, ok, "%v Hz at %v dBFS, %d Hz", tc.freq, tc.db, rate)
			if ok {
				require.InDelta(t, tc.freq, f, tc.freq*0.01)
			}
		}
		noise := amdtest.Noise(20*time.Millisecond, -20, 1, rate)
		_, ok := tn.detect(noise)
		require.False(t, ok, "noise")
	}
}

// TestSpeechFramesAreNoTone counts the frames of espeak-ng speech the
// tone test takes for a tone: isolated ones are harmless (a beep needs
// BeepMin in a row), but they should be rare.
func TestSpeechFramesAreNoTone(t *testing.T) {
	var tn tone
	tn.init(16000)
	pcm := amdtest.Speech(t, amdtest.Greeting, "en+f3", 16000)
	tones, run, longest := 0, 0, 0
	for i := 0; i+320 <= len(pcm); i += 320 {
		if _, ok := tn.detect(pcm[i : i+320]); ok {
			tones++
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	t.Logf("%d of %d speech frames look like a tone, at most %d in a row", tones, len(pcm)/320, longest)
	require.Less(t, longest, 4)
}
