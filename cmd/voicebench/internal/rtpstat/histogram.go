package rtpstat

import (
	"math"
	"math/bits"
)

// subBits sets the resolution: 2^subBits buckets per power of two, so a
// bucket spans at most 1/32 (3.1%) of its values.
const subBits = 5

const (
	sub      = 1 << subBits
	nBuckets = (63 - subBits + 1) * sub // int64 values stop below 2^63
)

// Histogram counts non-negative integer values (typically nanoseconds) in
// log-scale buckets: exact below 32, then 32 buckets per power of two. It
// is a fixed 15 KiB array; Add is a few instructions and never allocates.
type Histogram struct {
	counts [nBuckets]uint64
	n      uint64
	sum    float64
	max    int64
}

func bucket(v int64) int {
	if v < sub {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - 1 // v in [2^e, 2^(e+1))
	return (e-subBits+1)*sub + int(uint64(v)>>(e-subBits)) - sub
}

// lower returns the smallest value of bucket i.
func lower(i int) int64 {
	if i < sub {
		return int64(i)
	}
	e := i/sub + subBits - 1
	return int64(uint64(i%sub+sub) << (e - subBits))
}

// Add counts v; negative values count as 0.
func (h *Histogram) Add(v int64) {
	v = max(v, 0)
	h.counts[bucket(v)]++
	h.n++
	h.sum += float64(v)
	h.max = max(h.max, v)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }

// Count returns how many values were added.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest value added.
func (h *Histogram) Max() int64 { return h.max }

// Mean returns the mean of the values added, 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile returns an upper bound of the q-quantile (0 < q <= 1): the top
// of the bucket holding it, never above Max. It is within 3.1% above the
// true value, and 0 when empty.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i+1 >= nBuckets {
				return h.max
			}
			return min(lower(i+1)-1, h.max)
		}
	}
	return h.max
}

// Bin is one bucket of a histogram: Count values in [Lo, Hi).
type Bin struct {
	Lo, Hi int64
	Count  uint64
}

// Bins returns the non-empty buckets in ascending order, merged so no
// more than maxBins remain (adjacent buckets are joined).
func (h *Histogram) Bins(maxBins int) []Bin {
	var out []Bin
	for i, c := range h.counts {
		if c > 0 {
			hi := int64(math.MaxInt64)
			if i+1 < nBuckets {
				hi = lower(i + 1)
			}
			out = append(out, Bin{Lo: lower(i), Hi: hi, Count: c})
		}
	}
	for maxBins > 0 && len(out) > maxBins {
		merged := out[:0]
		for i := 0; i < len(out); i += 2 {
			b := out[i]
			if i+1 < len(out) {
				b.Hi = out[i+1].Hi
				b.Count += out[i+1].Count
			}
			merged = append(merged, b)
		}
		out = merged
	}
	return out
}
