package media

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMixTo(t *testing.T) {
	a := []int16{0, 1, -1, 32767, -32768, 30000, -30000, 20000, 32767}
	b := []int16{0, 2, -2, 1, -1, 30000, -30000, -20000, -32768}
	want := []int16{0, 3, -3, 32767, -32768, 32767, -32768, 0, -1}
	dst := make([]int16, len(a)+2)
	dst[len(a)] = 99
	require.Equal(t, len(a), MixTo(dst, a, b))
	require.Equal(t, want, dst[:len(a)])
	require.Equal(t, int16(99), dst[len(a)], "beyond the count is untouched")

	require.Equal(t, 3, MixTo(dst[:3], a, b))
	require.Equal(t, 2, MixTo(dst, a[:2], b))
	require.Equal(t, 1, MixTo(dst, a, b[:1]))
	require.Zero(t, MixTo(nil, a, b))

	// dst may alias an input.
	x := append([]int16(nil), a...)
	MixTo(x, x, b)
	require.Equal(t, want, x)
}

func TestMixInto(t *testing.T) {
	dst := []int16{100, 32000, -32000, 5, 7}
	require.Equal(t, 3, MixInto(dst, []int16{-100, 1000, -1000}))
	require.Equal(t, []int16{0, 32767, -32768, 5, 7}, dst)
	require.Zero(t, MixInto(dst, nil))
}

// TestMixMatchesReference checks random and extreme pairs against int
// arithmetic with explicit clamping.
func TestMixMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := make([]int16, 4096), make([]int16, 4096)
	for i := range a {
		a[i], b[i] = int16(rng.Uint32()), int16(rng.Uint32())
	}
	a[0], b[0] = -32768, -32768
	a[1], b[1] = 32767, 32767
	got := make([]int16, len(a))
	MixTo(got, a, b)
	in := append([]int16(nil), a...)
	MixInto(in, b)
	for i := range a {
		s := int(a[i]) + int(b[i])
		s = max(-32768, min(32767, s))
		require.Equal(t, int16(s), got[i], "%d + %d", a[i], b[i])
		require.Equal(t, int16(s), in[i], "%d + %d", a[i], b[i])
	}
}
