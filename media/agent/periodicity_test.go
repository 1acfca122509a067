package agent

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media"
)

// TestPeriodicity: a caller's speech with pink noise 10 dB under it has
// a pitch in many of its frames, pink noise alone in none (the voiced
// rule of bargein.go), and babble (voices) keeps a median periodicity
// over aperiodicMax, so the rule stays off under it while pink noise's
// median is under it.
func TestPeriodicity(t *testing.T) {
	rate := media.Rate16k
	fin := media.SamplesPerFrame(rate)
	median := func(x []float64) float64 {
		m := 0.0
		for i, p := range x {
			switch {
			case i == 0:
				m = p
			case p > m:
				m += periodicityStep
			default:
				m -= periodicityStep
			}
		}
		return m
	}
	for _, noise := range []string{"pink", "babble"} {
		var voice, bg []float64 // periodicity of speech frames with and without the caller
		var all []float64       // every noise frame's, in order
		for i := range 4 {
			rnd := rand.New(rand.NewPCG(uint64(i), 91))
			var n []float64
			if noise == "babble" {
				n = babble(t, rnd, 10*rate, rate, speechRMS*math.Pow(10, -10.0/20))
			} else {
				n = pinkNoise(rnd, 10*rate, speechRMS*math.Pow(10, -10.0/20))
			}
			caller := normalize(echoCorpus.get(t, callerSentences[i%len(callerSentences)], callerVoices[i%len(callerVoices)], rate), fin, speechRMS)
			mix, only := make([]int16, len(caller)), make([]int16, len(caller))
			for x := range caller {
				y := n[x%len(n)] + rnd.NormFloat64()*30
				only[x] = int16(max(-32768, min(32767, math.Round(y))))
				mix[x] = int16(max(-32768, min(32767, math.Round(y+float64(caller[x])))))
			}
			for f := 1; (f+1)*fin <= len(caller); f++ {
				pn := periodicity(only[:(f+1)*fin], fin, rate)
				all = append(all, pn)
				if float64(level(energy(caller[f*fin:(f+1)*fin]))) < 20*math.Log10(speechRMS)-10 {
					continue
				}
				voice = append(voice, periodicity(mix[:(f+1)*fin], fin, rate))
				bg = append(bg, pn)
			}
		}
		share := func(x []float64) float64 {
			k := 0
			for _, p := range x {
				if p >= voicedMin {
					k++
				}
			}
			return float64(k) / float64(len(x))
		}
		m := median(all)
		t.Logf("%s: voiced speech frames %.2f, noise frames %.3f, noise median %.2f", noise, share(voice), share(bg), m)
		if noise == "pink" {
			require.Greater(t, share(voice), 0.5, "speech frames in pink noise with a pitch")
			require.Less(t, share(bg), 0.01, "pink noise frames taken for a pitch")
			require.Less(t, m, aperiodicMax, "pink noise's median periodicity")
		} else {
			require.GreaterOrEqual(t, m, aperiodicMax, "babble's median periodicity")
		}
	}
	// Too little history, or digital silence: no pitch.
	require.Zero(t, periodicity(make([]int16, fin), fin, rate))
	require.Zero(t, periodicity(make([]int16, 3*fin), fin, rate))
}

// BenchmarkPeriodicity: the voiced rule's cost per 20 ms frame at 16 kHz
// (it runs on every caller frame while the agent talks).
func BenchmarkPeriodicity(b *testing.B) {
	rate := media.Rate16k
	fin := media.SamplesPerFrame(rate)
	x := pinkNoise(rand.New(rand.NewPCG(1, 2)), 4*fin, 1000)
	buf := make([]int16, len(x))
	for i, v := range x {
		buf[i] = int16(v)
	}
	for b.Loop() {
		periodicity(buf, fin, rate)
	}
}
