package rtp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransitDeviation: the per-packet |D| distribution (TransitStats)
// counts each audio packet's transit difference in 125 µs steps, and a
// reset (a new SSRC) keeps the call's counts.
func TestTransitDeviation(t *testing.T) {
	var r rxStats
	require.Zero(t, func() int { _, n := r.dev.quantile(0.99); return n }(), "off: nothing counted")
	r.dev = new(devHist)
	base := time.Now()
	r.reset(1, 0, 8000, base)
	// 100 packets 20 ms apart, one in ten arriving 3 ms late (its D and
	// the next one's are 24 timestamp units = 3 ms).
	for i := range 100 {
		at := base.Add(time.Duration(i) * 20 * time.Millisecond)
		if i%10 == 5 {
			at = at.Add(3 * time.Millisecond)
		}
		r.update(uint16(i), at)
		r.transit(uint32(i*160), at)
	}
	p50, n := r.dev.quantile(0.5)
	require.Equal(t, 99, n)
	require.Equal(t, devWidth, p50)
	p99, _ := r.dev.quantile(0.99)
	require.Equal(t, 3*time.Millisecond+devWidth, p99)
	r.reset(2, 0, 8000, base)
	_, n = r.dev.quantile(0.99)
	require.Equal(t, 99, n, "a new source keeps the call's counts")
}
