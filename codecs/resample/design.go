package resample

import (
	"math"
	"sync"
)

// tapAlign is the multiple each polyphase branch's length is rounded up to.
const tapAlign = 8

// filter is the polyphase decomposition of one linear-phase Kaiser-windowed
// sinc low-pass designed at the intermediate rate up*inRate.
//
// Output sample m sits at intermediate index j = m*down. It is the dot
// product of phase j%up (K coefficients, stored time-reversed so the inner
// loop walks forward) with the K input samples ending at input j/up.
type filter struct {
	up, down int       // L and M: outRate/inRate reduced to L/M
	taps     int       // K: coefficients per phase
	coefs    []float32 // up phases of taps coefficients each, time-reversed
	delay    int       // group delay in output samples: center / down
	// half marks a half-band filter for upsampling by two: phase 0 is a
	// single unit coefficient at index copyAt (an input sample copied
	// through), phase 1 a linear-phase inner product.
	half   bool
	copyAt int
}

// designs holds every filter designed so far, by rates and spec: a
// filter's coefficients are read-only once designed, so every Resampler of
// one design shares them. A node's thousand calls then read one copy,
// which stays in the CPU's caches, instead of a thousand, and New costs a
// map lookup instead of a design after the first.
var designs struct {
	sync.Mutex
	m map[designKey]filter
}

type designKey struct {
	inRate, outRate int
	s               spec
}

// designed returns design(inRate, outRate, s), shared.
func designed(inRate, outRate int, s spec) filter {
	k := designKey{inRate, outRate, s}
	designs.Lock()
	defer designs.Unlock()
	f, ok := designs.m[k]
	if !ok {
		f = design(inRate, outRate, s)
		if designs.m == nil {
			designs.m = make(map[designKey]filter)
		}
		designs.m[k] = f
	}
	return f
}

// design builds the filter for converting inRate to outRate with spec s.
//
// The passband ends at s.passEdge times the lower rate and the stopband starts
// at half the lower rate (its Nyquist frequency), so every alias of a
// downsampled tone and every image of an upsampled one lands in the stopband.
// The cutoff is the middle of that transition band; the length follows
// Kaiser's formula N-1 = (A-7.95) / (2.285 * transition in rad/sample). The
// center tap is rounded up to a multiple of down so that the group delay is a
// whole number of output samples.
func design(inRate, outRate int, s spec) filter {
	g := gcd(inRate, outRate)
	up, down := outRate/g, inRate/g
	if s.halfBand {
		if up == 2 && down == 1 {
			return designHalfBand(inRate, s)
		}
		s, _ = QualityLow.spec() // QualityPhone elsewhere
	}
	lower := float64(min(inRate, outRate))
	fsI := float64(inRate * up)

	pass, stop := s.passEdge*lower, 0.5*lower
	fc := (pass + stop) / 2 / fsI // normalized cutoff, cycles per sample
	dw := 2 * math.Pi * (stop - pass) / fsI
	center := kaiserLength(s.attenuation, dw) / 2 // ceil((n-1)/2): half the minimum length
	center = (center + down - 1) / down * down
	length := 2*center + 1
	taps := alignTaps((length + up - 1) / up)
	win := newKaiser(s.attenuation, center)

	h := make([]float64, taps*up)
	sum := 0.0
	for i := range length {
		t := float64(i - center)
		h[i] = 2 * fc * sinc(2*fc*t) * win.at(t)
		sum += h[i]
	}
	// Each of the up phases must have unit DC gain, so the whole filter sums
	// to up (zero stuffing divides the signal's level by up).
	scale := float64(up) / sum

	coefs := make([]float32, taps*up)
	for p := range up {
		for t := range taps {
			coefs[p*taps+taps-1-t] = float32(h[p+t*up] * scale)
		}
	}
	return filter{up: up, down: down, taps: taps, coefs: coefs, delay: center / down}
}

// kaiserLength is Kaiser's estimate of the length N of a low-pass filter
// with attenuation a dB over a transition of dw radians per sample:
// N-1 = (a-7.95) / (2.285*dw).
func kaiserLength(a, dw float64) int {
	return int(math.Ceil((a-7.95)/(2.285*dw))) + 1
}

// alignTaps rounds a phase's length up to a whole number of SIMD blocks;
// the zero taps added at its oldest end do not change the output.
func alignTaps(taps int) int {
	return (taps + tapAlign - 1) / tapAlign * tapAlign
}

// kaiser is the Kaiser window for an attenuation, over a filter whose
// center is center taps from either end.
type kaiser struct {
	beta, i0beta float64
	center       float64
}

func newKaiser(a float64, center int) kaiser {
	beta := kaiserBeta(a)
	return kaiser{beta: beta, i0beta: besselI0(beta), center: float64(center)}
}

// at is the window's value t taps from the center.
func (k kaiser) at(t float64) float64 {
	r := t / k.center
	return besselI0(k.beta*math.Sqrt(max(0, 1-r*r))) / k.i0beta
}

func kaiserBeta(a float64) float64 {
	switch {
	case a > 50:
		return 0.1102 * (a - 8.7)
	case a >= 21:
		return 0.5842*math.Pow(a-21, 0.4) + 0.07886*(a-21)
	}
	return 0
}

// besselI0 is the zeroth-order modified Bessel function of the first kind,
// summed from its power series until the terms stop contributing.
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	q := x * x / 4
	for k := 1; k < 500; k++ {
		term *= q / float64(k*k)
		sum += term
		if term < sum*1e-17 {
			break
		}
	}
	return sum
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// designHalfBand builds the half-band interpolator by two of QualityPhone:
// a Kaiser-windowed sinc cut off at the input's Nyquist frequency (a
// quarter of the output rate), with the transition band symmetric about
// it, from s.passEdge to 1-s.passEdge of the input rate. Such a filter is
// zero at every even distance from its center except the center itself,
// so phase 0 (the center's, the center being even) is one coefficient, 1,
// and phase 1 holds the odd taps, normalized to unit DC gain. Its length
// follows the same Kaiser formula over the wider transition: 57 taps at
// 8 to 16 kHz, of which 28 are not zero, against QualityLow's 81.
func designHalfBand(inRate int, s spec) filter {
	fsI := float64(2 * inRate)
	pass, stop := s.passEdge*float64(inRate), (1-s.passEdge)*float64(inRate)
	dw := 2 * math.Pi * (stop - pass) / fsI
	center := (kaiserLength(s.attenuation, dw)/2 + 1) / 2 * 2 // even, so the center falls in phase 0
	length := 2*center + 1
	taps := alignTaps((length + 1) / 2)
	win := newKaiser(s.attenuation, center)

	coefs := make([]float32, 2*taps)
	odd := make([]float64, taps)
	sum := 0.0
	for t := range taps {
		i := 1 + 2*t // phase 1: h[1], h[3], ...
		if i >= length {
			break
		}
		d := float64(i - center)
		odd[t] = 0.5 * sinc(0.5*d) * win.at(d)
		sum += odd[t]
	}
	for t := range taps {
		coefs[taps+taps-1-t] = float32(odd[t] / sum)
	}
	// Phase 0 holds h[center] at t = center/2, stored time-reversed.
	copyAt := taps - 1 - center/2
	coefs[copyAt] = 1
	return filter{up: 2, down: 1, taps: taps, coefs: coefs, delay: center, half: true, copyAt: copyAt}
}
