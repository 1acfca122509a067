package resample

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPortableMatchesFMA runs every pair with the portable inner products
// (what CPUs without AVX2+FMA and other architectures run) and checks the
// output against the FMA path within one LSB.
func TestPortableMatchesFMA(t *testing.T) {
	if !hasFMA {
		t.Skip("this CPU has no AVX2+FMA: the portable path is the only one and the other tests cover it")
	}
	eachPair(t, func(t *testing.T, in, out int) {
		src := noise(9, in/5)
		fma := runFrames(t, newHigh(t, in, out), src, in, out)
		hasFMA = false
		defer func() { hasFMA = true }()
		portable := runFrames(t, newHigh(t, in, out), src, in, out)
		require.Len(t, portable, len(fma))
		for i := range fma {
			require.InDelta(t, fma[i], portable[i], 1, "sample %d", i)
		}
	})
}
