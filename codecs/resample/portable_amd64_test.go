package resample

import (
	"math"
	"math/rand/v2"
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

// TestPolyFMAMatchesGeneric runs the assembly polyphase loop against the
// portable one (runDot) on random filters and inputs: every step pattern of
// the supported ratios, several branch lengths, starting positions inside
// a chunk, and output limits that stop the loop early.
func TestPolyFMAMatchesGeneric(t *testing.T) {
	if !hasFMA {
		t.Skip("this CPU has no AVX2+FMA: there is no assembly loop to compare")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ratio := range [][2]int{{2, 1}, {3, 1}, {1, 2}, {1, 3}, {2, 3}, {3, 2}, {1, 6}, {6, 1}, {320, 441}, {160, 147}} {
		up, down := ratio[0], ratio[1]
		for _, k := range []int{8, 16, 24, 48, 64, 344} {
			const n = 480
			coefs := make([]float32, up*k)
			for i := range coefs {
				coefs[i] = float32(rng.NormFloat64())
			}
			buf := make([]float32, k-1+n)
			for i := range buf {
				buf[i] = float32(rng.NormFloat64() * 10000)
			}
			for _, start := range [][2]int{{0, 0}, {1, up - 1}, {2, up / 2}} {
				for _, limit := range []int{1, 7, (n*up + down - 1) / down} {
					r := &Resampler{f: filter{up: up, down: down, taps: k, coefs: coefs}, w: &work{buf: buf}}
					r.base, r.phase = start[0], start[1]
					want := make([]float32, limit)
					wn := r.runDot(want, n)
					wantPos := [2]int{r.base, r.phase}
					r.base, r.phase = start[0], start[1]
					got := make([]float32, limit)
					gn, ok := r.polySIMD(got, n)
					if up > 3 && down == 1 {
						require.False(t, ok, "upsampling by %d stays with runUp", up)
						continue
					}
					require.True(t, ok)
					require.Equal(t, wn, gn, "up=%d down=%d k=%d limit=%d", up, down, k, limit)
					require.Equal(t, wantPos, [2]int{r.base, r.phase})
					for i := range wn {
						row := coefs[((start[1]+i*(down%up))%up)*k:][:k]
						mag := 0.0
						for _, c := range row {
							mag += math.Abs(float64(c)) * 40000
						}
						require.InDelta(t, want[i], got[i], 1e-6*mag, "up=%d down=%d k=%d output %d", up, down, k, i)
					}
				}
			}
		}
	}
}

// TestFirFMAMatchesGeneric runs the half-band filter's FIR kernel against
// a float64 inner product on random filters and inputs, for branch
// lengths and output counts that exercise its 32-, 8- and 1-output paths,
// and checks that an output is the same whichever path computed it.
func TestFirFMAMatchesGeneric(t *testing.T) {
	if !hasFMA {
		t.Skip("this CPU has no AVX2+FMA: there is no assembly loop to compare")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{8, 24, 32, 48} {
		for _, n := range []int{1, 7, 8, 31, 32, 45, 160} {
			coefs := make([]float32, k)
			for i := range coefs {
				coefs[i] = float32(rng.NormFloat64() / 8)
			}
			x := make([]float32, n+k-1)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 10000)
			}
			out := make([]float32, n)
			firFMA(&out[0], &coefs[0], &x[0], k, n)
			for i := range n {
				var want float64
				for j := range k {
					want += float64(coefs[j]) * float64(x[i+j])
				}
				require.InDelta(t, want, float64(out[i]), 0.05, "k %d n %d output %d", k, n, i)
				var one [1]float32
				firFMA(&one[0], &coefs[0], &x[i], k, 1)
				require.Equal(t, out[i], one[0], "k %d n %d output %d alone", k, n, i)
			}
		}
	}
}
