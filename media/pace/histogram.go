package pace

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram counts durations in log-linear microsecond buckets: exact below
// 16 µs, then 16 buckets per power of two (within 6.25%), up to about 2^30
// µs. Record is one atomic add and is safe from any goroutine; quantiles
// read a racy but monotonic snapshot, which is what a metric needs.
type histogram struct {
	counts [histBuckets]atomic.Uint64
	max    atomic.Int64
	// n and sum (ns) make the distribution a Prometheus summary.
	n   atomic.Uint64
	sum atomic.Int64
}

const (
	histSub     = 16
	histBuckets = histSub + 27*histSub
)

func histIndex(us uint64) int {
	if us < histSub {
		return int(us)
	}
	exp := bits.Len64(us) - 5 // us>>exp is in [16, 32)
	i := histSub + exp*histSub + int(us>>exp) - histSub
	return min(i, histBuckets-1)
}

// histUpper returns the largest value, in µs, that falls in bucket i.
func histUpper(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	exp := (i - histSub) / histSub
	mant := uint64(i-histSub-exp*histSub) + histSub
	return (mant+1)<<exp - 1
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(uint64(d/time.Microsecond))].Add(1)
	h.n.Add(1)
	h.sum.Add(int64(d))
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// quantile returns the upper edge of the bucket holding the q-quantile
// (0 < q <= 1), so the true value is at most this, and at least 94% of it.
// It returns 0 when nothing was recorded.
func (h *histogram) quantile(q float64) time.Duration {
	var total uint64
	for i := range h.counts {
		total += h.counts[i].Load()
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			d := time.Duration(histUpper(i)) * time.Microsecond
			return min(d, time.Duration(h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}
