package opus

import (
	"math"
	"math/rand/v2"
)

// voice returns n samples at rate of a voice-like test signal: a harmonic
// series whose pitch glides between 110 and 230 Hz, shaped into four
// "syllables" per second with a little breath noise, peaking near -6 dBFS.
func voice(rate, n int) []int16 {
	rng := rand.New(rand.NewPCG(11, 12))
	s := make([]int16, n)
	phase := 0.0
	for i := range s {
		t := float64(i) / float64(rate)
		f0 := 170 + 60*math.Sin(2*math.Pi*0.7*t)
		phase += 2 * math.Pi * f0 / float64(rate)
		v := 0.0
		for h := 1; float64(h)*f0 < math.Min(float64(rate)/2, 7000); h++ {
			// A falling spectrum with a formant-like bump near 700 Hz.
			hf := float64(h) * f0
			v += math.Sin(float64(h)*phase) * (1 / float64(h)) * (1 + 2*math.Exp(-math.Pow((hf-700)/300, 2)))
		}
		env := math.Pow(math.Sin(math.Pi*math.Mod(4*t, 1)), 2)
		s[i] = int16(max(-32768, min(32767, 5000*env*v+200*rng.NormFloat64())))
	}
	return s
}

// sine returns n samples of a sine at f Hz and amplitude a.
func sine(f, a float64, rate, n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(math.Round(a * math.Sin(2*math.Pi*f*float64(i)/float64(rate))))
	}
	return s
}

// energy returns the sum of squares of x.
func energy(x []int16) float64 {
	e := 0.0
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return e
}

// diffEnergy returns the sum of squared differences of a and b.
func diffEnergy(a, b []int16) float64 {
	e := 0.0
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		e += d * d
	}
	return e
}

// correlation returns the normalized cross-correlation of a and b.
func correlation(a, b []int16) float64 {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// bestLag returns the lag in [lo, hi] at which out (delayed) best matches
// in, by normalized cross-correlation over the middle of the signal.
func bestLag(in, out []int16, lo, hi int) (lag int, corr float64) {
	start, n := len(in)/4, len(in)/2
	corr = -2
	for l := lo; l <= hi; l++ {
		if c := correlation(in[start:start+n], out[start+l:start+l+n]); c > corr {
			lag, corr = l, c
		}
	}
	return lag, corr
}
