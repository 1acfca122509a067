package resample

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func ours(tb testing.TB, inRate, outRate int, q Quality) func() processor {
	return func() processor {
		r, err := New(inRate, outRate, q)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = r.Close() })
		return r
	}
}

// TestAliasRejection checks every alias of a tone above the output Nyquist
// frequency and every image of an upsampled tone against the documented
// rejection of each quality, for every pair of supported rates.
func TestAliasRejection(t *testing.T) {
	for _, q := range []Quality{QualityHigh, QualityLow} {
		limit := map[Quality]float64{QualityHigh: -80, QualityLow: -60}[q]
		for _, in := range inRates {
			for _, out := range rates {
				if in == out {
					continue
				}
				t.Run(fmt.Sprintf("%v/%dto%d", q, in, out), func(t *testing.T) {
					worst, f := worstSpur(t, ours(t, in, out, q), in, out)
					t.Logf("worst spur %.1f dB (tone %.0f Hz)", worst, f)
					require.Less(t, worst, limit, "tone %.0f Hz", f)
				})
			}
		}
	}
}

// TestPassbandRipple checks that tones up to 0.45 (High) or 0.40 (Low) of the
// lower rate pass within 0.1 dB of unity gain, for every pair of rates.
func TestPassbandRipple(t *testing.T) {
	for _, q := range []Quality{QualityHigh, QualityLow} {
		edge := map[Quality]float64{QualityHigh: 0.45, QualityLow: 0.40}[q]
		for _, in := range inRates {
			for _, out := range rates {
				if in == out {
					continue
				}
				t.Run(fmt.Sprintf("%v/%dto%d", q, in, out), func(t *testing.T) {
					lo, hi := passbandGain(t, ours(t, in, out, q), in, out, edge)
					t.Logf("passband gain %+.4f..%+.4f dB", lo, hi)
					require.Greater(t, lo, -0.1)
					require.Less(t, hi, 0.1)
				})
			}
		}
	}
}
