package dsp

import (
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// care marks the frames that count when scoring a VAD: those not within two
// frames before or five frames after a speech/non-speech transition of the
// truth (onsets and the release tail are judgement calls).
func care(truth []bool) []bool {
	out := make([]bool, len(truth))
	for i := range truth {
		out[i] = true
		for d := -5; d <= 2; d++ {
			if j := i + d; j >= 0 && j < len(truth) && truth[j] != truth[i] {
				out[i] = false
			}
		}
	}
	return out
}

// vadSpeech is the test utterance set: both clips with pauses, 9.7 s.
func vadSpeech(t testing.TB) []int16 {
	return concat(silence(24000), loadWAV(t, "caller16k.wav"), silence(12000),
		loadWAV(t, "agent16k.wav"), silence(12000), loadWAV(t, "caller16k.wav"), silence(20000))
}

// brownNoise is a leaky random walk: rumble and wind, most energy below 50 Hz.
func brownNoise(n int, rms float64, seed uint64) []float64 {
	w := whiteNoise(n, 1, seed)
	var y float64
	for i, x := range w {
		y = 0.995*y + x
		w[i] = y
	}
	return scaleTo(w, rms)
}

// hissNoise is differentiated white noise: most energy at high frequencies.
func hissNoise(n int, rms float64, seed uint64) []float64 {
	w := whiteNoise(n, 1, seed)
	prev := 0.0
	for i, x := range w {
		w[i], prev = x-prev, x
	}
	return scaleTo(w, rms)
}

// scoreVAD runs a fresh VAD over in and scores it against truth, skipping
// the first 10 frames and the transition margins.
func scoreVAD(t testing.TB, cfg VADConfig, in []int16, truth []bool, flen int) scorer {
	v, err := NewVAD(cfg)
	require.NoError(t, err)
	cr := care(truth)
	var s scorer
	for f := range len(truth) {
		r := v.Process(in[f*flen : (f+1)*flen])
		require.GreaterOrEqual(t, r.Probability, float32(0))
		require.LessOrEqual(t, r.Probability, float32(1))
		if f >= 10 && cr[f] {
			s.add(truth[f], r.Speech)
		}
	}
	return s
}

// speechInNoise scores the VAD at rate on speech (frames of flen
// samples, truth per frame) mixed with four noises at 30, 10 and 5 dB
// SNR of the speech's active level ar: it finds 90% of the speech frames
// and flags at most 5% of the others.
func speechInNoise(t *testing.T, rate int, speech []int16, truth []bool, ar float64, flen int) {
	noises := []struct {
		name string
		gen  func(int, float64, uint64) []float64
	}{{"white", whiteNoise}, {"pink", pinkishNoise}, {"brown", brownNoise}, {"hiss", hissNoise}}
	for _, nz := range noises {
		for _, snr := range []float64{30, 10, 5} {
			t.Run(nz.name+"/"+strconv.Itoa(int(snr))+"dB", func(t *testing.T) {
				in := toInt16(mix(toFloat(speech), nz.gen(len(speech), ar*math.Pow(10, -snr/20), 99)))
				s := scoreVAD(t, VADConfig{SampleRate: rate}, in, truth, flen)
				t.Logf("%d Hz, %s noise at %.0f dB SNR: %v", rate, nz.name, snr, s)
				require.GreaterOrEqual(t, s.recall(), 0.9, "speech frames found")
				require.LessOrEqual(t, s.falseAlarm(), 0.05, "non-speech frames flagged")
			})
		}
	}
}

func TestVADSpeechInNoise(t *testing.T) {
	sp := vadSpeech(t)
	speechInNoise(t, 16000, sp, speechTruth(sp), activeRMS(sp), frameLen)
}

func TestVADQuietSpeech(t *testing.T) {
	// -45 dBFS active speech over a -75 dBFS floor: still speech.
	sp := vadSpeech(t)
	truth := speechTruth(sp)
	q := toFloat(sp)
	scaleTo(q, 32768*math.Pow(10, -45.0/20)*rmsF(toFloat(sp))/activeRMS(sp))
	in := toInt16(mix(q, whiteNoise(len(q), 32768*math.Pow(10, -75.0/20), 1)))
	s := scoreVAD(t, VADConfig{}, in, truth, frameLen)
	t.Logf("-45 dBFS speech: %v", s)
	require.GreaterOrEqual(t, s.recall(), 0.9)
	require.LessOrEqual(t, s.falseAlarm(), 0.05)
}

func TestVAD8kHz(t *testing.T) {
	// Telephone-band speech: the clips averaged pairwise down to 8 kHz, in
	// white noise at 10 dB SNR.
	sp := vadSpeech(t)
	truth := speechTruth(sp)
	nb := make([]int16, len(sp)/2)
	for i := range nb {
		nb[i] = int16((int(sp[2*i]) + int(sp[2*i+1])) / 2)
	}
	ar := activeRMS(sp)
	in := toInt16(mix(toFloat(nb), whiteNoise(len(nb), ar*math.Pow(10, -10.0/20), 3)))
	s := scoreVAD(t, VADConfig{SampleRate: 8000}, in, truth, frameLen/2)
	t.Logf("8 kHz, white noise at 10 dB SNR: %v", s)
	require.GreaterOrEqual(t, s.recall(), 0.9)
	require.LessOrEqual(t, s.falseAlarm(), 0.05)
}

// Telephone-band speech in the noises of TestVADSpeechInNoise: the rate
// of a G.711 call's agent.
func TestVADSpeechInNoise8kHz(t *testing.T) {
	sp := vadSpeech(t)
	nb := make([]int16, len(sp)/2)
	for i := range nb {
		nb[i] = int16((int(sp[2*i]) + int(sp[2*i+1])) / 2)
	}
	speechInNoise(t, 8000, nb, speechTruth(sp), activeRMS(sp), frameLen/2)
}

func TestVAD48kHz(t *testing.T) {
	// The clips repeated three times per sample up to 48 kHz, in white
	// noise at 10 dB SNR.
	sp := vadSpeech(t)
	truth := speechTruth(sp)
	fb := make([]int16, 3*len(sp))
	for i := range fb {
		fb[i] = sp[i/3]
	}
	ar := activeRMS(sp)
	in := toInt16(mix(toFloat(fb), whiteNoise(len(fb), ar*math.Pow(10, -10.0/20), 3)))
	s := scoreVAD(t, VADConfig{SampleRate: 48000}, in, truth, 3*frameLen)
	t.Logf("48 kHz, white noise at 10 dB SNR: %v", s)
	require.GreaterOrEqual(t, s.recall(), 0.9)
	require.LessOrEqual(t, s.falseAlarm(), 0.05)
}

func TestVADNoiseOnly(t *testing.T) {
	for name, in := range map[string][]int16{
		"digital silence": silence(10 * 16000),
		"white -30 dBFS":  toInt16(whiteNoise(10*16000, 32768*math.Pow(10, -30.0/20), 5)),
		"pink -20 dBFS":   toInt16(pinkishNoise(10*16000, 32768*math.Pow(10, -20.0/20), 6)),
		"hum 50 Hz":       toInt16(mix(tone(10*16000, 50, 3000), tone(10*16000, 150, 1000))),
		"tone 1 kHz":      toInt16(tone(10*16000, 1000, 3000)),
	} {
		t.Run(name, func(t *testing.T) {
			v, err := NewVAD(VADConfig{})
			require.NoError(t, err)
			flagged := 0
			for f := range len(in) / frameLen {
				if v.Process(in[f*frameLen:(f+1)*frameLen]).Speech && f >= 5 {
					flagged++
				}
			}
			require.Zero(t, flagged, "frames flagged as speech after the first 100 ms")
		})
	}
}

func TestVADNoiseStepAdapts(t *testing.T) {
	// Noise jumps 20 dB and stays: the VAD may call the step speech, but
	// must adopt the new floor within one window (1.6 s) plus release.
	in := toInt16(append(whiteNoise(3*16000, 32768*math.Pow(10, -50.0/20), 3),
		whiteNoise(6*16000, 32768*math.Pow(10, -30.0/20), 4)...))
	v, err := NewVAD(VADConfig{})
	require.NoError(t, err)
	last := -1
	for f := range len(in) / frameLen {
		if v.Process(in[f*frameLen : (f+1)*frameLen]).Speech {
			last = f
		}
	}
	after := float64(last-150) * 0.02
	t.Logf("speech flagged until %.2f s after the step", after)
	require.Less(t, after, 2.0)
}

func TestVADHangover(t *testing.T) {
	// A 300 ms burst in silence: with Hangover 10 Speech lasts 10 frames
	// longer than without.
	burst := toInt16(whiteNoise(4800, 3000, 9))
	in := concat(silence(16000), burst, silence(16000))
	count := func(h int) int {
		v, err := NewVAD(VADConfig{Hangover: h})
		require.NoError(t, err)
		n := 0
		for f := range len(in) / frameLen {
			if v.Process(in[f*frameLen : (f+1)*frameLen]).Speech {
				n++
			}
		}
		return n
	}
	base := count(0)
	require.Greater(t, base, 10)
	require.Equal(t, base+10, count(10))
}

func TestNewVADErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg   VADConfig
		field string
		err   error
	}{
		"rate":      {VADConfig{SampleRate: 4000}, "SampleRate", ErrSampleRate},
		"threshold": {VADConfig{Threshold: 1}, "Threshold", ErrConfig},
		"hangover":  {VADConfig{Hangover: -1}, "Hangover", ErrConfig},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewVAD(tc.cfg)
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.err), err)
			require.Contains(t, err.Error(), tc.field)
		})
	}
}

func TestVADZeroAlloc(t *testing.T) {
	v, err := NewVAD(VADConfig{})
	require.NoError(t, err)
	frame := toInt16(whiteNoise(frameLen, 1000, 1))
	allocs := testing.AllocsPerRun(100, func() { v.Process(frame) })
	require.Zero(t, allocs)
}

func TestVADSilenceSpeed(t *testing.T) {
	// Digital silence must not drive the filters into denormal floats.
	v, err := NewVAD(VADConfig{})
	require.NoError(t, err)
	noise := toInt16(whiteNoise(frameLen, 1000, 1))
	zero := make([]int16, frameLen)
	v.Process(noise)
	for range 200 {
		v.Process(zero)
	}
	for _, x := range []float32{v.h1, v.hpy, v.lp1, v.lp2} {
		require.True(t, x == 0 || math.Abs(float64(x)) > 1e-30, "filter state %g is denormal or nearly", x)
	}
}

func BenchmarkDSPVADLight(b *testing.B) {
	speech := loadWAV(b, "agent16k.wav")[8000 : 8000+frameLen]
	nb := make([]int16, frameLen/2) // the same 20 ms at 8 kHz
	for i := range nb {
		nb[i] = int16((int(speech[2*i]) + int(speech[2*i+1])) / 2)
	}
	for _, rc := range []struct {
		name          string
		rate          int
		speech, quiet []int16
	}{
		{"16k", 16000, speech, make([]int16, frameLen)},
		{"8k", 8000, nb, make([]int16, frameLen/2)},
	} {
		v, err := NewVAD(VADConfig{SampleRate: rc.rate})
		require.NoError(b, err)
		for _, tc := range []struct {
			name  string
			frame []int16
		}{{"speech", rc.speech}, {"silence", rc.quiet}} {
			b.Run(rc.name+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					v.Process(tc.frame)
				}
			})
		}
	}
}

// TestVADBandThreeFullScale: the highest band's energy is the pairs'
// squared differences, summed as integers; a full-scale tone at the
// Nyquist frequency (+32767, -32768, ...) makes each difference 65535,
// whose square needs more than 32 bits.
func TestVADBandThreeFullScale(t *testing.T) {
	v, err := NewVAD(VADConfig{})
	require.NoError(t, err)
	frame := make([]int16, frameLen)
	for i := range frame {
		frame[i] = 32767
		if i%2 == 1 {
			frame[i] = -32768
		}
	}
	bands := v.analysePairs(frame)
	want := float64(frameLen/2) * 65535 * 65535 / 4
	require.InEpsilon(t, want, float64(bands[3]), 1e-6)
}
