package amd

import "math"

// Beep band and thresholds.
const (
	// 400-2000 Hz, with 5% to spare for an estimate at the edge.
	beepLowHz  = 380
	beepHighHz = 2100
	// toneMinPower is the quietest tone taken (mean square, int16 units):
	// -45 dBFS RMS.
	toneMinPower = 32768 * 32768 * 3.16e-5
	// toneMinShare is the least share of the frame's energy the Goertzel
	// filters at the fitted frequency must hold: the tone about 4 dB
	// above the rest of the frame. Speech frames hold well under it.
	toneMinShare = 0.7
	// toneLags is the highest autocorrelation lag of the frequency fit.
	toneLags = 8
)

// tone tests single frames for a pure tone in the beep band. It keeps
// no state between frames but its constants and scratch.
type tone struct {
	rate           float64
	minCos, maxCos float64   // cos(w) at the band's high and low edges
	y              []float64 // the frame less its mean
}

func (t *tone) init(rate int) {
	t.rate = float64(rate)
	t.minCos = math.Cos(2 * math.Pi * beepHighHz / t.rate)
	t.maxCos = math.Cos(2 * math.Pi * beepLowHz / t.rate)
	t.y = make([]float64, rate/50)
}

// detect returns the frequency of the pure tone filling frame (20 ms),
// and whether there is one. A sinusoid's autocorrelation obeys
// r(k-1) + r(k+1) = 2cos(w) r(k); white noise adds to r(0) alone, so
// cos(w) is fitted by least squares on lags 1 to toneLags, which line
// noise does not bias. Goertzel filters at and around w then measure the
// share of the frame's energy at that frequency: near 1 for a tone, less
// by the noise for a noisy one, far less for speech (many harmonics) and
// noise. The frame's mean is removed first (a DC offset is not a tone).
func (t *tone) detect(frame []int16) (float64, bool) {
	n := len(frame)
	fn := float64(n)
	var sum, sq int64
	for _, v := range frame {
		sum += int64(v)
		sq += int64(v) * int64(v)
	}
	mean := float64(sum) / fn
	r0 := float64(sq) - fn*mean*mean
	if r0 < toneMinPower*fn {
		return 0, false // quiet: most frames stop here
	}
	y := t.y[:n]
	for i, v := range frame {
		y[i] = float64(v) - mean
	}
	// Unbiased autocorrelation (lag k has n-k products), then the
	// least-squares cos(w) over k = 2..toneLags-1.
	var r [toneLags + 1]float64
	r[0] = r0
	for k := 1; k <= toneLags; k++ {
		var acc float64
		for i := k; i < n; i++ {
			acc += y[i] * y[i-k]
		}
		r[k] = acc * fn / (fn - float64(k))
	}
	var num, den float64
	for k := 2; k < toneLags; k++ {
		num += r[k] * (r[k-1] + r[k+1])
		den += 2 * r[k] * r[k]
	}
	if den == 0 {
		return 0, false
	}
	c := num / den
	if c < t.minCos || c > t.maxCos {
		return 0, false
	}
	// Goertzel at w, and a quarter of the filter's main lobe (1/n of the
	// rate) to either side, as noise moves the estimate: |X(w)|^2 of a
	// tone of amplitude A over n samples is (nA/2)^2 and its energy
	// nA^2/2, so the share is 2|X|^2 / (n r0).
	w := math.Acos(c)
	step := 2 * math.Pi / (4 * fn)
	best, bestW := 0.0, w
	for _, f := range [3]float64{w, w - step, w + step} {
		if p := goertzel(y, 2*math.Cos(f)); p > best {
			best, bestW = p, f
		}
	}
	if 2*best < toneMinShare*fn*r0 {
		return 0, false
	}
	w = bestW
	return w * t.rate / (2 * math.Pi), true
}

// goertzel returns |X|^2 of y at the frequency whose 2cos(w) is coeff.
func goertzel(y []float64, coeff float64) float64 {
	var s1, s2 float64
	for _, v := range y {
		s := v + coeff*s1 - s2
		s2, s1 = s1, s
	}
	return s1*s1 + s2*s2 - coeff*s1*s2
}
