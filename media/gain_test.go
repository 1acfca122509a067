package media

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGainFromDB(t *testing.T) {
	six := 20 * math.Log10(2)
	for _, tc := range []struct {
		db   float64
		want Gain
	}{
		{0, 32768},
		{-six, 16384},
		{six, 65536},
		{-20, 3277},
		{20, 327680},
		{math.Inf(-1), 0},
		{-200, 0},
		{math.NaN(), Unity},
		{1000, GainFromDB(48)},
		{math.Inf(1), GainFromDB(48)},
	} {
		require.Equal(t, tc.want, GainFromDB(tc.db), "%v dB", tc.db)
	}
	require.InDelta(t, 48, GainFromDB(48).DB(), 0.001)
	require.InDelta(t, -20, GainFromDB(-20).DB(), 0.01)
	require.Equal(t, math.Inf(-1), Gain(0).DB())
}

func TestGainApply(t *testing.T) {
	frame := []int16{0, 1, -1, 2, -2, 3, 1000, -1000, 32767, -32768}
	g := GainFromDB(-20 * math.Log10(2)) // exactly one half
	g.Apply(frame)
	// Halves round half up: 1 -> 1, -1 -> 0, 3 -> 2.
	require.Equal(t, []int16{0, 1, 0, 1, -1, 2, 500, -500, 16384, -16384}, frame)

	loud := []int16{20000, -20000, 100, -100}
	GainFromDB(20 * math.Log10(2)).Apply(loud)
	require.Equal(t, []int16{32767, -32768, 200, -200}, loud, "saturates")

	same := []int16{5, -5, 32767}
	Unity.Apply(same)
	require.Equal(t, []int16{5, -5, 32767}, same)

	mute := []int16{5, -5, 32767, -32768}
	ApplyGain(mute, math.Inf(-1))
	require.Equal(t, []int16{0, 0, 0, 0}, mute)
}

// TestGainMatchesFloat compares the fixed-point path with float arithmetic
// on every sample value for several gains: at most one step apart (the
// gain itself is rounded to Q15).
func TestGainMatchesFloat(t *testing.T) {
	all := make([]int16, 1<<16)
	for _, db := range []float64{-60, -12.5, -3, -0.1, 0.1, 3, 9.5, 30} {
		for i := range all {
			all[i] = int16(i - 32768)
		}
		fixed := append([]int16(nil), all...)
		ApplyGain(fixed, db)
		ref := append([]int16(nil), all...)
		applyGainFloat(ref, db)
		for i := range all {
			d := int(fixed[i]) - int(ref[i])
			if d < -1 || d > 1 {
				t.Fatalf("%v dB on %d: fixed %d, float %d", db, all[i], fixed[i], ref[i])
			}
		}
	}
}

// applyGainFloat is the float reference: scale each sample by 10^(db/20),
// round, saturate.
func applyGainFloat(frame []int16, db float64) {
	g := float32(math.Pow(10, db/20))
	for i, s := range frame {
		v := float32(s) * g
		frame[i] = int16(max(-32768, min(32767, float32(math.Round(float64(v))))))
	}
}
