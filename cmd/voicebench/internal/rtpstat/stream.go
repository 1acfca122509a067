package rtpstat

import (
	"time"

	"github.com/voiced/voiced/media/quality"
)

// Stream is the receive statistics of one RTP stream (one SSRC).
type Stream struct {
	clock float64 // ns per RTP timestamp unit

	started  bool
	base     uint32 // extended sequence number of the first packet
	maxExt   uint32 // highest extended sequence number seen
	window   [2]uint64
	received uint64
	dups     uint64
	bursts   uint64

	lastArrival int64
	lastTS      uint32
	jitter      float64 // ns, the RFC 3550 estimate J
	jitterMax   float64
	first, last int64
}

// NewStream returns statistics for a stream whose RTP clock runs at
// clockRate Hz (8000 for G.711, 48000 for Opus).
func NewStream(clockRate int) *Stream {
	s := &Stream{}
	s.Reset(clockRate)
	return s
}

// Reset clears the statistics for a new stream at clockRate Hz.
func (s *Stream) Reset(clockRate int) {
	*s = Stream{clock: 1e9 / float64(clockRate)}
}

// Add records one packet with sequence number seq and RTP timestamp ts,
// arrived at arrival (Unix ns). It returns the packet's transit
// difference |D| against the previous in-order packet (RFC 3550 section
// 6.4.1), in ns, and whether the packet was new (not a duplicate or a
// packet older than the 128-packet window).
func (s *Stream) Add(seq uint16, ts uint32, arrival int64) (d int64, fresh bool) {
	if !s.started {
		s.started = true
		s.base = uint32(seq)
		s.maxExt = uint32(seq)
		s.window = [2]uint64{1, 0}
		s.received = 1
		s.lastArrival, s.lastTS = arrival, ts
		s.first, s.last = arrival, arrival
		return 0, true
	}
	s.last = arrival
	delta := int32(int16(seq - uint16(s.maxExt)))
	ext := uint32(int64(s.maxExt) + int64(delta))
	switch {
	case delta > 0:
		if delta > 1 {
			s.bursts++
		}
		s.shift(uint32(delta))
		s.maxExt = ext
		s.window[0] |= 1
	case -delta >= 128 || ext < s.base:
		return 0, false // too old to place; not counted
	default:
		back := uint32(-delta)
		w, bit := back/64, back%64
		if s.window[w]&(1<<bit) != 0 {
			s.dups++
			return 0, false
		}
		s.window[w] |= 1 << bit
	}
	s.received++
	// RFC 3550 A.8: D(i,j) = (Rj - Ri) - (Sj - Si), J += (|D| - J)/16.
	df := float64(arrival-s.lastArrival) - float64(int32(ts-s.lastTS))*s.clock
	if df < 0 {
		df = -df
	}
	s.jitter += (df - s.jitter) / 16
	s.jitterMax = max(s.jitterMax, s.jitter)
	s.lastArrival, s.lastTS = arrival, ts
	return int64(df), true
}

// shift moves the duplicate window forward by n packets.
func (s *Stream) shift(n uint32) {
	switch {
	case n >= 128:
		s.window = [2]uint64{}
	case n >= 64:
		s.window = [2]uint64{0, s.window[0] << (n - 64)}
	default:
		s.window = [2]uint64{s.window[0] << n, s.window[1]<<n | s.window[0]>>(64-n)}
	}
}

// Summary is a Stream's figures at one moment.
type Summary struct {
	Received    uint64  `json:"received"`
	Expected    uint64  `json:"expected"`
	Lost        uint64  `json:"lost"`
	Duplicates  uint64  `json:"duplicates"`
	LossBursts  uint64  `json:"loss_bursts"`
	LossPercent float64 `json:"loss_percent"`
	JitterMs    float64 `json:"jitter_ms"`
	JitterMaxMs float64 `json:"jitter_max_ms"`
	// Span is the time from the first to the last packet.
	Span time.Duration `json:"span_ns"`
}

// Summary returns the current figures. Packets missing after the last
// one received are not known to be lost yet and are not counted.
func (s *Stream) Summary() Summary {
	if !s.started {
		return Summary{}
	}
	expected := uint64(s.maxExt-s.base) + 1
	var lost uint64
	if expected > s.received {
		lost = expected - s.received
	}
	return Summary{
		Received:    s.received,
		Expected:    expected,
		Lost:        lost,
		Duplicates:  s.dups,
		LossBursts:  s.bursts,
		LossPercent: 100 * float64(lost) / float64(expected),
		JitterMs:    s.jitter / 1e6,
		JitterMaxMs: s.jitterMax / 1e6,
		Span:        time.Duration(s.last - s.first),
	}
}

// MOS rates a stream with the ITU-T G.107 E-model of media/quality: the
// listener hears the stream's loss, and a mouth-to-ear delay of the
// one-way network delay plus a jitter buffer twice the interarrival
// jitter (no less than one 20 ms frame).
func (m Summary) MOS(codec string, oneWay time.Duration) (r, mos float64) {
	c, _ := quality.CodecByName(codec)
	buffer := max(time.Duration(2*m.JitterMs*float64(time.Millisecond)), 20*time.Millisecond)
	e := quality.EModel{
		Codec:       c,
		LossPercent: m.LossPercent,
		BurstRatio:  quality.BurstRatio(m.Lost, m.LossBursts, m.Expected),
		Delay:       oneWay + buffer,
	}
	return e.R(), e.MOS()
}
