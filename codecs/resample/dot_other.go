//go:build !amd64

package resample

// dot returns the inner product of a and b[:len(a)].
func dot(a, b []float32) float32 { return dotGeneric(a, b) }
