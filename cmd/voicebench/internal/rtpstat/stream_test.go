package rtpstat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const frame = int64(20 * time.Millisecond)

// feed sends count packets of 160 samples at 8 kHz starting at seq0,
// skipping those drop returns true for, arriving at offset(i) ns late.
func feed(s *Stream, seq0 uint16, count int, drop func(int) bool, offset func(int) int64) {
	for i := range count {
		if drop != nil && drop(i) {
			continue
		}
		var off int64
		if offset != nil {
			off = offset(i)
		}
		s.Add(seq0+uint16(i), uint32(1000+160*i), 1e12+int64(i)*frame+off)
	}
}

func TestStreamPerfect(t *testing.T) {
	s := NewStream(8000)
	feed(s, 100, 500, nil, func(int) int64 { return 3e6 }) // constant transit: no jitter
	m := s.Summary()
	require.Equal(t, uint64(500), m.Received)
	require.Equal(t, uint64(500), m.Expected)
	require.Zero(t, m.Lost)
	require.Zero(t, m.LossPercent)
	require.InDelta(t, 0, m.JitterMs, 1e-9)
	require.Equal(t, time.Duration(499*frame), m.Span)
}

func TestStreamJitterConverges(t *testing.T) {
	// Transit alternates 0 and 1 ms: every |D| is 1 ms, so J tends to 1 ms.
	s := NewStream(8000)
	feed(s, 0, 400, nil, func(i int) int64 { return int64(i%2) * 1e6 })
	m := s.Summary()
	require.InDelta(t, 1.0, m.JitterMs, 0.001)
	require.InDelta(t, 1.0, m.JitterMaxMs, 0.001)

	// One 16 ms spike moves J by 16/16 = 1 ms, then it decays.
	s = NewStream(8000)
	var ds []int64
	for i := range 100 {
		off := int64(0)
		if i == 50 {
			off = 16e6
		}
		d, _ := s.Add(uint16(i), uint32(160*i), int64(i)*frame+off)
		ds = append(ds, d)
	}
	require.Equal(t, int64(16e6), ds[50])
	require.Equal(t, int64(16e6), ds[51])
	require.InDelta(t, 1.0+15.0/16, s.Summary().JitterMaxMs, 0.001)
}

func TestStreamLossAndBursts(t *testing.T) {
	s := NewStream(8000)
	lost := map[int]bool{10: true, 11: true, 12: true, 300: true, 700: true}
	feed(s, 65000, 1000, func(i int) bool { return lost[i] }, nil) // wraps past 65535
	m := s.Summary()
	require.Equal(t, uint64(995), m.Received)
	require.Equal(t, uint64(1000), m.Expected)
	require.Equal(t, uint64(5), m.Lost)
	require.Equal(t, uint64(3), m.LossBursts)
	require.InDelta(t, 0.5, m.LossPercent, 1e-9)
}

func TestStreamReorderAndDuplicates(t *testing.T) {
	s := NewStream(8000)
	order := []int{0, 1, 3, 2, 4, 4, 5, 2, 6}
	for _, i := range order {
		s.Add(uint16(i), uint32(160*i), int64(i)*frame)
	}
	m := s.Summary()
	require.Equal(t, uint64(7), m.Received)
	require.Equal(t, uint64(7), m.Expected)
	require.Zero(t, m.Lost)
	require.Equal(t, uint64(2), m.Duplicates)
	// A packet older than the window is ignored, not counted.
	for i := 7; i < 300; i++ {
		s.Add(uint16(i), uint32(160*i), int64(i)*frame)
	}
	_, fresh := s.Add(10, 1600, 0)
	require.False(t, fresh)
	require.Equal(t, uint64(300), s.Summary().Received)
}

func TestStreamLateFillNotLoss(t *testing.T) {
	// A packet lost then arriving 70 packets later (beyond the first word
	// of the window) is still placed.
	s := NewStream(48000)
	for i := range 100 {
		if i == 20 {
			continue
		}
		s.Add(uint16(i), uint32(960*i), int64(i)*frame)
		if i == 90 {
			s.Add(20, 960*20, int64(i)*frame)
		}
	}
	m := s.Summary()
	require.Zero(t, m.Lost)
	require.Equal(t, uint64(100), m.Received)
}

func TestSummaryMOS(t *testing.T) {
	clean := Summary{Received: 1000, Expected: 1000}
	r, mos := clean.MOS("PCMU", 0)
	// G.711, 20 ms codec + 20 ms buffer: Id = 0.024*40 = 0.96.
	require.InDelta(t, 93.2-0.96, r, 0.01)
	require.InDelta(t, 4.39, mos, 0.005)

	lossy := Summary{Received: 950, Expected: 1000, Lost: 50, LossBursts: 50, LossPercent: 5}
	_, lossyMOS := lossy.MOS("PCMU", 0)
	require.Less(t, lossyMOS, 4.0)
	require.Greater(t, lossyMOS, 3.5)

	_, far := clean.MOS("opus", 300*time.Millisecond)
	require.Less(t, far, mos-0.5)
}

func TestStreamAllocatesNothing(t *testing.T) {
	s := NewStream(8000)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		s.Add(uint16(i), uint32(160*i), int64(i)*frame)
		i++
	})
	require.Zero(t, allocs)
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 20000)
	for i := range vals {
		vals[i] = int64(rng.ExpFloat64() * 2e6)
		h.Add(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.Quantile(q)
		require.GreaterOrEqual(t, got, exact, "q=%v", q)
		require.LessOrEqual(t, float64(got), float64(exact)*1.032+1, "q=%v", q)
	}
	require.Equal(t, vals[len(vals)-1], h.Max())
	require.Equal(t, uint64(len(vals)), h.Count())

	var sum float64
	for _, v := range vals {
		sum += float64(v)
	}
	require.InDelta(t, sum/float64(len(vals)), h.Mean(), 1)

	var m Histogram
	m.Merge(&h)
	m.Merge(&h)
	require.Equal(t, 2*h.Count(), m.Count())
	require.Equal(t, h.Quantile(0.99), m.Quantile(0.99))
	m.Reset()
	require.Zero(t, m.Count())
	require.Zero(t, m.Quantile(0.5))
}

func TestHistogramBucketsAreContiguous(t *testing.T) {
	for i := range nBuckets - 1 {
		require.Equal(t, i, bucket(lower(i)), "lower(%d)", i)
		if i+1 < nBuckets-1 {
			require.Equal(t, i, bucket(lower(i+1)-1), "top of %d", i)
			require.Less(t, lower(i), lower(i+1))
		}
	}
	require.Equal(t, nBuckets-1, bucket(math.MaxInt64))
}

func TestHistogramBins(t *testing.T) {
	var h Histogram
	for v := range int64(1000) {
		h.Add(v * 1000)
	}
	all := h.Bins(0)
	var n uint64
	for i, b := range all {
		n += b.Count
		require.Less(t, b.Lo, b.Hi)
		if i > 0 {
			require.LessOrEqual(t, all[i-1].Hi, b.Lo)
		}
	}
	require.Equal(t, uint64(1000), n)
	few := h.Bins(20)
	require.LessOrEqual(t, len(few), 20)
	n = 0
	for _, b := range few {
		n += b.Count
	}
	require.Equal(t, uint64(1000), n)
	require.Equal(t, all[0].Lo, few[0].Lo)
	require.Equal(t, all[len(all)-1].Hi, few[len(few)-1].Hi)
}

func BenchmarkStreamAdd(b *testing.B) {
	s := NewStream(8000)
	var h Histogram
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		d, _ := s.Add(uint16(i), uint32(160*i), int64(i)*frame+int64(i%3)*1000)
		h.Add(d)
		i++
	}
}
