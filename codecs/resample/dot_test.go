package resample

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDotMatchesGeneric checks the SIMD inner product (where the CPU has it)
// against the portable one for every length up to 300, including the block
// remainders and the scalar tail.
func TestDotMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := make([]float32, 300), make([]float32, 300)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
		b[i] = float32(rng.NormFloat64() * 10000)
	}
	for n := range len(a) + 1 {
		want := float64(dotGeneric(a[:n], b))
		got := float64(dot(a[:n], b))
		// float32 sums in different orders differ by rounding: allow a
		// few ulps of the magnitude that passes through the accumulators.
		mag := 0.0
		for i := range n {
			mag += math.Abs(float64(a[i] * b[i]))
		}
		require.InDelta(t, want, got, 1e-6*mag+1e-9, "n=%d", n)
	}
}

// TestDotPhasesMatchesGeneric checks the grouped inner products used for
// integer upsampling against the portable ones, for 1 to 6 phases.
func TestDotPhasesMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{8, 16, 24, 120, 344} {
		coefs, x := make([]float32, 6*k), make([]float32, k)
		for i := range coefs {
			coefs[i] = float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 10000)
		}
		for up := 1; up <= 6; up++ {
			got, want := make([]float32, up), make([]float32, up)
			dotPhases(got, coefs, x, k)
			dotPhasesGeneric(want, coefs, x, k)
			for p := range up {
				mag := 0.0
				for i := range k {
					mag += math.Abs(float64(coefs[p*k+i] * x[i]))
				}
				require.InDelta(t, want[p], got[p], 1e-6*mag, "k=%d up=%d phase %d", k, up, p)
			}
		}
	}
}
