package rtp

import "time"

// Sequence validation constants of RFC 3550 Appendix A.1.
const (
	maxDropout  = 3000
	maxMisorder = 100
)

// rxStats follows the peer's stream as RFC 3550 Appendix A describes:
// extended sequence numbers (A.1), expected and lost packets and the
// interval loss fraction (A.3), and the interarrival jitter (A.8). It
// belongs to the receive goroutine and is read for RTCP under Session.mu.
type rxStats struct {
	started bool
	ssrc    uint32
	clock   int64 // RTP clock rate of the audio

	maxSeq   uint16
	cycles   uint32 // wraps of the sequence number, shifted left 16
	baseSeq  uint32
	badSeq   uint32
	received uint64
	bursts   uint64

	expectedPrior, receivedPrior uint64

	base        time.Time
	lastTransit int64
	haveTransit bool
	jitter      int64 // RFC 3550 A.8 estimate, in timestamp units times 16
	// dev counts |D| per packet (Config.TransitStats); nil when off. It
	// survives reset: it describes the call, not one SSRC.
	dev *devHist

	// From the peer's last sender report (for our receiver reports).
	lastSR   uint32 // middle 32 bits of its NTP timestamp
	lastSRAt time.Time
}

func (r *rxStats) reset(ssrc uint32, seq uint16, clock int, now time.Time) {
	*r = rxStats{
		dev:      r.dev,
		started:  true,
		ssrc:     ssrc,
		clock:    int64(clock),
		maxSeq:   seq,
		baseSeq:  uint32(seq),
		badSeq:   1<<16 + 1,
		received: 0,
		base:     now,
	}
}

// update accounts one RTP packet of the peer's stream (audio, comfort
// noise or telephone-event: one sequence space) and reports whether it
// belongs to the stream (false for a wild sequence jump, dropped until a
// second packet confirms it, as in A.1).
func (r *rxStats) update(seq uint16, now time.Time) bool {
	udelta := seq - r.maxSeq
	switch {
	case udelta < maxDropout:
		if seq < r.maxSeq {
			r.cycles += 1 << 16
		}
		if udelta > 1 {
			r.bursts++
		}
		r.maxSeq = seq
	case uint32(udelta) <= 1<<16-maxMisorder:
		// A very large jump: restart if the next packet follows it.
		if uint32(seq) == r.badSeq {
			ssrc, clock := r.ssrc, int(r.clock)
			r.reset(ssrc, seq, clock, now)
		} else {
			r.badSeq = uint32(seq+1) & 0xffff
			return false
		}
	default:
		// A duplicate or a reordered packet: counted, no new maximum.
	}
	r.received++
	return true
}

// transit updates the interarrival jitter (A.8) with an audio packet's
// timestamp: telephone-event packets repeat their event's start timestamp
// and would read as jitter.
func (r *rxStats) transit(ts uint32, now time.Time) {
	// Arrival time in timestamp units.
	arrival := int64(now.Sub(r.base)) * r.clock / int64(time.Second)
	transit := arrival - int64(ts)
	if r.haveTransit {
		d := transit - r.lastTransit
		// Transit differences wrap with the 32-bit timestamp.
		d = int64(int32(d))
		if d < 0 {
			d = -d
		}
		r.jitter += d - (r.jitter+8)>>4
		if r.dev != nil {
			r.dev.add(d, r.clock)
		}
	}
	r.lastTransit, r.haveTransit = transit, true
}

func (r *rxStats) extMax() uint32 { return r.cycles + uint32(r.maxSeq) }

func (r *rxStats) expected() uint64 {
	if !r.started {
		return 0
	}
	return uint64(r.extMax()-r.baseSeq) + 1
}

// lost is expected minus received, which duplicates can make negative.
func (r *rxStats) lost() int64 { return int64(r.expected()) - int64(r.received) }

// jitterTS returns the interarrival jitter in timestamp units.
func (r *rxStats) jitterTS() uint32 { return uint32(r.jitter >> 4) }

// jitterDur returns the interarrival jitter as a duration.
func (r *rxStats) jitterDur() time.Duration {
	if r.clock == 0 {
		return 0
	}
	return time.Duration(int64(r.jitterTS()) * int64(time.Second) / r.clock)
}

// interval returns the loss fraction since the previous call, in 1/256
// (A.3), and starts a new interval.
func (r *rxStats) interval() uint8 {
	exp, rec := r.expected(), r.received
	expI, recI := exp-r.expectedPrior, rec-r.receivedPrior
	r.expectedPrior, r.receivedPrior = exp, rec
	if expI == 0 || recI >= expI {
		return 0
	}
	return uint8((expI - recI) << 8 / expI)
}

// devWidth is the width of a devHist bucket; devBuckets of them reach 50
// ms.
const (
	devWidth   = 125 * time.Microsecond
	devBuckets = 400
)

// devHist counts transit differences |D| in devWidth buckets.
type devHist struct {
	n      int
	counts [devBuckets]uint32
}

// add counts d, in timestamp units of clock.
func (h *devHist) add(d, clock int64) {
	if clock <= 0 {
		return
	}
	i := min(d*int64(time.Second)/clock/int64(devWidth), devBuckets-1)
	h.counts[i]++
	h.n++
}

// quantile returns the upper edge of the bucket holding the q-quantile
// and the count; 0, 0 for a nil or empty histogram.
func (h *devHist) quantile(q float64) (time.Duration, int) {
	if h == nil || h.n == 0 {
		return 0, 0
	}
	rank := max(int(q*float64(h.n)+0.5), 1)
	seen := 0
	for i, c := range h.counts {
		seen += int(c)
		if seen >= rank {
			return time.Duration(i+1) * devWidth, h.n
		}
	}
	return devBuckets * devWidth, h.n
}
