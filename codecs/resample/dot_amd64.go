package resample

import "golang.org/x/sys/cpu"

// hasFMA selects the AVX2+FMA inner product; it is fixed at start-up by the
// CPU's features.
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotFMA is implemented in dot_amd64.s. a and b must hold n samples each.
//
//go:noescape
func dotFMA(a, b *float32, n int) float32

// dot returns the inner product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	if hasFMA && len(a) > 0 {
		b = b[:len(a)]
		return dotFMA(&a[0], &b[0], len(a))
	}
	return dotGeneric(a, b)
}
