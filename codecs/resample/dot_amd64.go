package resample

import "golang.org/x/sys/cpu"

// hasFMA selects the AVX2+FMA inner products; it is fixed at start-up by the
// CPU's features.
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotFMA is implemented in dot_amd64.s. a and b must hold n samples each.
//
//go:noescape
func dotFMA(a, b *float32, n int) float32

// dot3FMA and dot2FMA are implemented in dot_amd64.s: several inner products
// against one b, n a multiple of 8.
//
//go:noescape
func dot3FMA(a0, a1, a2, b *float32, n int, out *[3]float32)

//go:noescape
func dot2FMA(a0, a1, b *float32, n int, out *[2]float32)

// dot returns the inner product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	if hasFMA && len(a) > 0 {
		b = b[:len(a)]
		return dotFMA(&a[0], &b[0], len(a))
	}
	return dotGeneric(a, b)
}

// dotPhases sets out[p] to the inner product of phase p of coefs (k
// coefficients per phase, k a multiple of tapAlign) with x[:k], for every p
// in out, reading x once per two or three phases.
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
	for ; p+2 <= len(out); p += 2 {
		dot2FMA(&coefs[p*k], &coefs[(p+1)*k], &x[0], k, (*[2]float32)(out[p:p+2]))
	}
	for ; p < len(out); p++ {
		out[p] = dotFMA(&coefs[p*k], &x[0], k)
	}
}
