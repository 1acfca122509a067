package jitter

import "math"

// maxCNOrder is the highest all-pole model order CNG uses; RFC 3389 leaves
// the order open, and coefficients past it are ignored (section 3).
const maxCNOrder = 16

// CNG generates comfort noise from RFC 3389 CN payloads: the first byte is
// the noise level in -dBov (0 dBov being a full-scale square wave, RMS
// 32767; section 3.1), and any further bytes are reflection coefficients
// of an all-pole spectral model, each quantized as k = (q-127)/128
// (section 3.2). Noise is white noise shaped by that model and scaled so
// its RMS matches the level. Level changes glide over a few milliseconds
// rather than step. A CNG belongs to one stream; it never allocates.
type CNG struct {
	rms   float64 // target RMS of the output
	gain  float64 // excitation gain now (glides towards rms * predictor gain)
	goal  float64
	order int
	a     [maxCNOrder]float64 // direct-form predictor, A(z) = 1 + sum a[i] z^-(i+1)
	mem   [maxCNOrder]float64 // past outputs, mem[0] newest
	rng   uint64
}

// NewCNG returns a generator that is silent until its first Update.
func NewCNG() *CNG {
	return &CNG{rng: 0x9E3779B97F4A7C15}
}

// Update takes a CN payload. An empty payload is ignored.
func (c *CNG) Update(payload []byte) {
	if len(payload) == 0 {
		return
	}
	level := float64(payload[0] & 0x7f)
	c.rms = 32767 * math.Pow(10, -level/20)
	// Step-up recursion from reflection coefficients to the predictor,
	// accumulating the prediction error gain prod(1-k^2).
	order := min(len(payload)-1, maxCNOrder)
	var a, prev [maxCNOrder]float64
	errGain := 1.0
	for m := 0; m < order; m++ {
		k := (float64(payload[m+1]) - 127) / 128
		k = min(max(k, -0.99), 0.99)
		prev = a
		a[m] = k
		for i := 0; i < m; i++ {
			a[i] = prev[i] + k*prev[m-1-i]
		}
		errGain *= 1 - k*k
	}
	if order != c.order {
		c.mem = [maxCNOrder]float64{}
	}
	c.order = order
	c.a = a
	c.goal = c.rms * math.Sqrt(errGain)
	if c.gain == 0 {
		c.gain = c.goal
	}
}

// Level returns the RMS amplitude the last Update asked for (0 before any).
func (c *CNG) Level() float64 {
	return c.rms
}

// Generate fills dst with comfort noise.
func (c *CNG) Generate(dst []int16) {
	const glide = 0.995 // per sample: about 25 ms to settle at 8 kHz
	for i := range dst {
		c.gain = c.gain*glide + c.goal*(1-glide)
		y := c.white() * c.gain
		for j := 0; j < c.order; j++ {
			y -= c.a[j] * c.mem[j]
		}
		if c.order > 0 {
			copy(c.mem[1:c.order], c.mem[:c.order-1])
			c.mem[0] = y
		}
		dst[i] = sat(float32(y))
	}
}

// white returns a sample of unit-variance white noise: the sum of four
// uniform variables, roughly Gaussian.
func (c *CNG) white() float64 {
	var s float64
	for range 4 {
		c.rng ^= c.rng << 13
		c.rng ^= c.rng >> 7
		c.rng ^= c.rng << 17
		s += float64(c.rng>>11)/(1<<53) - 0.5
	}
	// Each uniform on [-0.5, 0.5) has variance 1/12; four of them 1/3.
	return s * math.Sqrt(3)
}
