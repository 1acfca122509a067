package resample

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

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

// TestConversionsMatchScalar checks the vector conversions at either end of
// the filter against the scalar ones sample by sample, for every length up
// to 70 (whole vectors and tails): rounding ties to even, saturation far
// beyond the int16 range, and every int16 input extreme.
func TestConversionsMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 32766.5, 32767, 32767.5, 32768, 1e9,
		-32767.5, -32768, -32768.5, -32769, -1e9, float32(math.Inf(1)), float32(math.Inf(-1))}
	for n := range 71 {
		y := make([]float32, n)
		for i := range y {
			if i < len(special) && n%2 == 0 {
				y[i] = special[i]
			} else {
				y[i] = float32(rng.NormFloat64() * 20000)
			}
		}
		got := make([]int16, n)
		toInt16s(got, y)
		for i, v := range y {
			require.Equal(t, toInt16(v), got[i], "n=%d y[%d]=%v", n, i, v)
		}

		src := make([]int16, n)
		for i := range src {
			src[i] = int16(rng.IntN(65536) - 32768)
		}
		if n > 2 {
			src[0], src[1] = -32768, 32767
		}
		x := make([]float32, n)
		toFloat(x, src)
		for i, v := range src {
			require.Equal(t, float32(v), x[i], "n=%d src[%d]", n, i)
		}
	}
	require.Equal(t, int16(2), toInt16(2.5))
	require.Equal(t, int16(-2), toInt16(-2.5))
	require.Equal(t, int16(32767), toInt16(1e9))
	require.Equal(t, int16(-32768), toInt16(-1e9))
}
