package amd

import "math"

// Beep band and thresholds.
const (
	beepLowHz  = 400
	beepHighHz = 2000
	// toneMinPower is the quietest tone taken (mean square, int16 units):
	// -45 dBFS RMS.
	toneMinPower = 32768 * 32768 * 3.16e-5
	// toneMaxResidual is the largest residual of the sinusoid fit,
	// relative to the frame's energy (-20 dB). G.711 quantization of a
	// tone leaves about -35 dB; speech and noise leave -10 dB or more.
	toneMaxResidual = 0.01
	// toneMinShare is the least share of the frame's energy the Goertzel
	// filter at the fitted frequency must hold.
	toneMinShare = 0.8
)

// tone tests single frames for a pure tone in the beep band. It keeps
// no state between frames but its constants.
type tone struct {
	rate           float64
	minCos, maxCos float64 // cos(w) at the band's high and low edges
}

func (t *tone) init(rate int) {
	t.rate = float64(rate)
	t.minCos = math.Cos(2 * math.Pi * beepHighHz / t.rate)
	t.maxCos = math.Cos(2 * math.Pi * beepLowHz / t.rate)
}

// detect returns the frequency of the pure tone filling frame, and
// whether there is one. A sinusoid x[n] = A sin(wn + p) satisfies
// x[n-1] + x[n+1] = 2cos(w) x[n] exactly; the least-squares cos(w) over
// the frame gives w, and what the fit leaves unexplained measures how far
// the frame is from one sinusoid. A Goertzel filter tuned to w then
// confirms that the tone holds the frame's energy. The frame's mean is
// removed first (a DC offset is not a tone).
func (t *tone) detect(frame []int16) (float64, bool) {
	n := len(frame)
	var sum int64
	for _, v := range frame {
		sum += int64(v)
	}
	mean := float64(sum) / float64(n)
	// One pass: energy, and the normal equations of the fit over the
	// interior samples: c = sum(y[i](y[i-1]+y[i+1])) / (2 sum(y[i]^2)).
	var energy, num, den float64
	prev, cur := float64(frame[0])-mean, float64(frame[1])-mean
	energy = prev*prev + cur*cur
	for i := 2; i < n; i++ {
		next := float64(frame[i]) - mean
		energy += next * next
		num += cur * (prev + next)
		den += cur * cur
		prev, cur = cur, next
	}
	if energy < toneMinPower*float64(n) || den == 0 {
		return 0, false
	}
	c := num / (2 * den)
	if c < t.minCos || c > t.maxCos {
		return 0, false
	}
	// Residual of the fit: sum((y[i-1]+y[i+1]) - 2c y[i])^2
	//   = S_pp - 4c num + 4c^2 den, with S_pp = sum((y[i-1]+y[i+1])^2),
	// computed in a second pass together with the Goertzel filter.
	coeff := 2 * c
	var spp, s1, s2 float64
	p0, p1 := float64(frame[0])-mean, float64(frame[1])-mean
	for i := 0; i < n; i++ {
		x := float64(frame[i]) - mean
		s := x + coeff*s1 - s2
		s2, s1 = s1, s
		if i >= 2 {
			side := p0 + x
			spp += side * side
			p0, p1 = p1, x
		}
	}
	residual := spp - 4*c*num + 4*c*c*den
	if residual > toneMaxResidual*4*den {
		return 0, false
	}
	// |X(w)|^2 of a tone of amplitude A over n samples is (nA/2)^2 and
	// its energy nA^2/2: the share is 2|X|^2 / (n energy).
	power := s1*s1 + s2*s2 - coeff*s1*s2
	if 2*power < toneMinShare*float64(n)*energy {
		return 0, false
	}
	return math.Acos(c) * t.rate / (2 * math.Pi), true
}
