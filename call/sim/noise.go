package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// The noise assets (scenario audio_conditions.noise_asset) are generated
// here, not recorded: each is a deterministic function of its name and
// sample rate (a fixed PCG seed), eight seconds long, looped. Nothing is
// stored in the repository and no third-party sound is used, so the
// assets are the project's own, under its licence. Each is built from
// what makes the place recognisable in the telephone band:
//
//   - street: rumbling brown noise with traffic swells (a car passing
//     every few seconds, up to about 4 dB louder) and broadband tyre
//     hiss;
//   - car: engine harmonics (about 30 Hz firing rate and its harmonics
//     up the band, wobbling with the revs) over low road noise;
//   - cafe: babble, six band-limited "talkers" whose levels follow a
//     random syllable-rate envelope, and the odd cup clink;
//   - office: soft pink noise (ventilation), mains hum and keyboard
//     clicks.
//
// Every asset is normalised to an RMS of 1.0 (as float64) so the mixer
// sets its level from the requested SNR alone.

// Assets are the noise assets' names, in the spec's order.
var Assets = []string{"cafe", "street", "car", "office"}

const assetSeconds = 8

var (
	assetMu    sync.Mutex
	assetCache = map[[2]any][]float64{}
)

// Asset returns the named noise asset at rate Hz, normalised to RMS 1.
// The slice is shared: do not modify it.
func Asset(name string, rate int) ([]float64, error) {
	key := [2]any{name, rate}
	assetMu.Lock()
	defer assetMu.Unlock()
	if a, ok := assetCache[key]; ok {
		return a, nil
	}
	var gen func(*rand.Rand, int) []float64
	switch name {
	case "street":
		gen = street
	case "car":
		gen = car
	case "cafe":
		gen = cafe
	case "office":
		gen = office
	default:
		return nil, fmt.Errorf("sim: unknown noise asset %q", name)
	}
	var seed uint64
	for _, c := range name {
		seed = seed*131 + uint64(c)
	}
	a := normalise(gen(rand.New(rand.NewPCG(seed, uint64(rate))), rate))
	assetCache[key] = a
	return a, nil
}

func normalise(x []float64) []float64 {
	var p float64
	for _, v := range x {
		p += v * v
	}
	g := 1 / math.Sqrt(p/float64(len(x)))
	for i := range x {
		x[i] *= g
	}
	return x
}

// onePole is a first-order low-pass at fc Hz.
type onePole struct{ a, y float64 }

func newOnePole(fc float64, rate int) *onePole {
	return &onePole{a: 1 - math.Exp(-2*math.Pi*fc/float64(rate))}
}

func (f *onePole) step(x float64) float64 { f.y += f.a * (x - f.y); return f.y }

// bandpass is an RBJ biquad band-pass (constant 0 dB peak gain).
type bandpass struct{ b0, b2, a1, a2, x1, x2, y1, y2 float64 }

func newBandpass(fc, q float64, rate int) *bandpass {
	w := 2 * math.Pi * fc / float64(rate)
	alpha := math.Sin(w) / (2 * q)
	a0 := 1 + alpha
	return &bandpass{b0: alpha / a0, b2: -alpha / a0, a1: -2 * math.Cos(w) / a0, a2: (1 - alpha) / a0}
}

func (f *bandpass) step(x float64) float64 {
	y := f.b0*x + f.b2*f.x2 - f.a1*f.y1 - f.a2*f.y2
	f.x2, f.x1 = f.x1, x
	f.y2, f.y1 = f.y1, y
	return y
}

// pink is Paul Kellet's economy pink-noise filter over white noise.
type pink struct{ b0, b1, b2 float64 }

func (p *pink) step(w float64) float64 {
	p.b0 = 0.99765*p.b0 + w*0.0990460
	p.b1 = 0.96300*p.b1 + w*0.2965164
	p.b2 = 0.57000*p.b2 + w*1.0526913
	return p.b0 + p.b1 + p.b2 + w*0.1848
}

func street(r *rand.Rand, rate int) []float64 {
	n := assetSeconds * rate
	out := make([]float64, n)
	var brown float64
	hiss := newBandpass(2500, 0.7, rate)
	rumble := newOnePole(400, rate)
	// Cars pass at random moments: a raised-cosine swell of 2-3 s each.
	type pass struct{ at, width, gain float64 }
	var passes []pass
	for t := r.Float64(); t < assetSeconds+2; t += 1.5 + 2.5*r.Float64() {
		passes = append(passes, pass{t, 2 + r.Float64(), 0.4 + 0.4*r.Float64()})
	}
	for i := range out {
		t := float64(i) / float64(rate)
		w := r.NormFloat64()
		brown = 0.995*brown + 0.1*w
		env := 1.0
		for _, p := range passes {
			if d := (t - p.at) / p.width; d > -0.5 && d < 0.5 {
				env += p.gain * 0.5 * (1 + math.Cos(2*math.Pi*d))
			}
		}
		out[i] = env * (rumble.step(brown) + 2*hiss.step(w))
	}
	return out
}

func car(r *rand.Rand, rate int) []float64 {
	n := assetSeconds * rate
	out := make([]float64, n)
	road := newOnePole(250, rate)
	var phase float64
	for i := range out {
		t := float64(i) / float64(rate)
		f0 := 30 * (1 + 0.05*math.Sin(2*math.Pi*0.2*t)) // the revs wander
		phase += 2 * math.Pi * f0 / float64(rate)
		var hum float64
		for h := 1; h <= 24; h++ {
			hum += math.Sin(float64(h)*phase+float64(h)) / float64(h)
		}
		out[i] = hum + 4*road.step(r.NormFloat64())
	}
	return out
}

func cafe(r *rand.Rand, rate int) []float64 {
	n := assetSeconds * rate
	out := make([]float64, n)
	const talkers = 6
	for k := 0; k < talkers; k++ {
		f := newBandpass(500+300*float64(k%3)+200*r.Float64(), 1.2, rate)
		f2 := newBandpass(1500+400*r.Float64(), 2, rate)
		env := 0.0
		target := 0.0
		next := 0
		smooth := newOnePole(12, rate)
		for i := range out {
			if i >= next { // a syllable or a pause, 80-300 ms
				next = i + int(float64(rate)*(0.08+0.22*r.Float64()))
				if r.Float64() < 0.7 {
					target = 0.4 + r.Float64()
				} else {
					target = 0
				}
			}
			env = smooth.step(target)
			w := r.NormFloat64()
			out[i] += env * (f.step(w)*2 + f2.step(w))
		}
	}
	// Cups and spoons: a decaying ring now and then.
	for t := 0.3 + r.Float64(); t < assetSeconds; t += 1 + 3*r.Float64() {
		f := 2500 + 1500*r.Float64()
		at := int(t * float64(rate))
		for j := 0; j < rate/5 && at+j < n; j++ {
			tt := float64(j) / float64(rate)
			out[at+j] += 0.8 * math.Exp(-tt*30) * math.Sin(2*math.Pi*f*tt)
		}
	}
	return out
}

func office(r *rand.Rand, rate int) []float64 {
	n := assetSeconds * rate
	out := make([]float64, n)
	var p pink
	for i := range out {
		t := float64(i) / float64(rate)
		out[i] = 0.15*p.step(r.NormFloat64()) + 0.2*math.Sin(2*math.Pi*120*t) + 0.1*math.Sin(2*math.Pi*240*t)
	}
	// Typing: bursts of clicks, 6-10 a second, between pauses.
	for t := 0.2; t < assetSeconds; {
		burst := 1 + 2*r.Float64()
		for end := t + burst; t < end && t < assetSeconds; t += 0.1 + 0.07*r.Float64() {
			at := int(t * float64(rate))
			for j := 0; j < rate/100 && at+j < n; j++ { // a 10 ms click
				out[at+j] += 1.5 * math.Exp(-float64(j)/float64(rate)*600) * r.NormFloat64()
			}
		}
		t += 0.5 + r.Float64()
	}
	return out
}
