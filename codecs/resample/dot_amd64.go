package resample

import "golang.org/x/sys/cpu"

// hasFMA selects the AVX2+FMA inner products; it is fixed at start-up by the
// CPU's features.
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot3FMA is implemented in dot_amd64.s: three inner products against one
// b, n a multiple of 8 (upsampling by 6 reads each input window once for
// three phases).
//
//go:noescape
func dot3FMA(a0, a1, a2, b *float32, n int, out *[3]float32)

// dotPhases sets out[p] to the inner product of phase p of coefs (k
// coefficients per phase, k a multiple of tapAlign) with x[:k], for every p
// in out, reading x once per three phases.
func dotPhases(out, coefs, x []float32, k int) {
	if !hasFMA {
		dotPhasesGeneric(out, coefs, x, k)
		return
	}
	x = x[:k]
	coefs = coefs[:len(out)*k]
	p := 0
	for ; p+3 <= len(out); p += 3 {
		dot3FMA(&coefs[p*k], &coefs[(p+1)*k], &coefs[(p+2)*k], &x[0], k, (*[3]float32)(out[p:p+3]))
	}
	dotPhasesGeneric(out[p:], coefs[p*k:], x, k)
}

// polyFMA, int16sToFloat and floatsToInt16 are implemented in dot_amd64.s:
// the whole per-chunk loop of run, and the conversions at either end of it,
// each in one call.
//
//go:noescape
func polyFMA(out, coefs, x *float32, k, n, limit, up, stepBase, stepPhase int, pos *[2]int) int

//go:noescape
func interleaveFloats(dst, a, b *float32, n int)

// interleave sets y[2i] = a[i] and y[2i+1] = b[i] for i < len(b), y
// holding 2*len(b) and a at least len(b).
func interleave(y, a, b []float32) {
	i := 0
	if hasFMA {
		i = len(b) &^ 7
		if i > 0 {
			interleaveFloats(&y[:2*i][0], &a[:i][0], &b[:i][0], i)
		}
	}
	interleaveGeneric(y[2*i:], a[i:], b[i:])
}

//go:noescape
func int16sToFloat(dst *float32, src *int16, n int)

//go:noescape
func floatsToInt16(dst *int16, src *float32, n int)

// toFloat sets x[i] = float32(src[i]).
func toFloat(x []float32, src []int16) {
	x = x[:len(src)]
	i := 0
	if hasFMA {
		i = len(src) &^ 7
		if i > 0 {
			int16sToFloat(&x[0], &src[0], i)
		}
	}
	for ; i < len(src); i++ {
		x[i] = float32(src[i])
	}
}

// polySIMD is runDot on CPUs with AVX2+FMA: the whole polyphase loop in
// one assembly call. It reports false (and does nothing) elsewhere, and for
// integer upsampling by more than 3, which runUp does for less (it reads each
// input window once for three phases).
func (r *Resampler) polySIMD(y []float32, n int) (int, bool) {
	f := &r.f
	if !hasFMA || f.down == 1 && f.up > 3 {
		return 0, false
	}
	pos := [2]int{r.base, r.phase}
	out := polyFMA(&y[0], &f.coefs[0], &r.w.buf[0], f.taps, n, len(y), f.up, f.down/f.up, f.down%f.up, &pos)
	r.base, r.phase = pos[0], pos[1]
	return out, true
}

//go:noescape
func firFMA(out, coefs, x *float32, k, n int)

// halfSIMD sets odd[i] to the inner product of ph1 (k coefficients) with
// r.w.buf[base+i:], for the len(odd) windows from base, in one firFMA call.
// It reports false, doing nothing, where there is no AVX2+FMA.
func (r *Resampler) halfSIMD(odd, ph1 []float32, base, windows int) bool {
	if !hasFMA {
		return false
	}
	k := len(ph1)
	x := r.w.buf[base : base+windows+k-1]
	firFMA(&odd[:windows][0], &ph1[0], &x[0], k, windows)
	return true
}

// toInt16s converts y to dst (len(dst) == len(y)) with toInt16's rounding
// and saturation, sixteen samples per vector step.
func toInt16s(dst []int16, y []float32) {
	i := 0
	if hasFMA {
		i = len(y) &^ 15
		if i > 0 {
			floatsToInt16(&dst[:i][0], &y[0], i)
		}
	}
	for ; i < len(y); i++ {
		dst[i] = toInt16(y[i])
	}
}
