//go:build !amd64

package resample

// dot returns the inner product of a and b[:len(a)].
func dot(a, b []float32) float32 { return dotGeneric(a, b) }

// dotPhases sets out[p] to the inner product of phase p of coefs (k
// coefficients per phase) with x[:k], for every p in out.
func dotPhases(out, coefs, x []float32, k int) { dotPhasesGeneric(out, coefs, x, k) }
