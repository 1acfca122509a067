//go:build !amd64

package resample

// dotPhases sets out[p] to the inner product of phase p of coefs (k
// coefficients per phase) with x[:k], for every p in out.
func dotPhases(out, coefs, x []float32, k int) { dotPhasesGeneric(out, coefs, x, k) }

// toFloat sets x[i] = float32(src[i]).
func toFloat(x []float32, src []int16) {
	x = x[:len(src)]
	for i, v := range src {
		x[i] = float32(v)
	}
}

// polySIMD reports false: there is no assembly loop on this architecture.
func (r *Resampler) polySIMD(y []float32, n int) (int, bool) { return 0, false }

// halfSIMD reports false: runHalf takes the portable inner products.
func (r *Resampler) halfSIMD(odd, ph1 []float32, base, windows int) bool { return false }

// interleave sets y[2i] = a[i] and y[2i+1] = b[i] for i < len(b).
func interleave(y, a, b []float32) { interleaveGeneric(y, a, b) }

// toInt16s converts y to dst (len(dst) == len(y)).
func toInt16s(dst []int16, y []float32) {
	for i, v := range y {
		dst[i] = toInt16(v)
	}
}
