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
