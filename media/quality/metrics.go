package quality

import (
	"sync/atomic"
	"time"
)

// Metrics are one call's live counters. Each field is updated by the one
// component that owns it (the RTP receive loop, the pacer's send path, the
// playout reader, the conversation engine) with atomic operations, so any
// goroutine may read them while the call runs and nothing allocates. Take a
// Snapshot for a consistent-enough copy to store or report.
//
// Durations are stored in nanoseconds.
type Metrics struct {
	// Receive side, from RTP (RFC 3550 section 6.4.1 and Appendix A.3).
	PacketsReceived atomic.Uint64 // RTP packets accepted from the latched source
	BytesReceived   atomic.Uint64 // their payload bytes
	PacketsExpected atomic.Uint64 // highest extended sequence - first + 1
	PacketsLost     atomic.Uint64 // expected - received, never negative
	LossBursts      atomic.Uint64 // runs of consecutive lost packets
	Duplicates      atomic.Uint64 // packets received twice
	SourceDrops     atomic.Uint64 // packets from another address after latching
	Malformed       atomic.Uint64 // datagrams that were not valid RTP/RTCP or had a payload type not negotiated
	Jitter          atomic.Int64  // interarrival jitter now, ns
	JitterMax       atomic.Int64  // largest interarrival jitter seen, ns

	// Jitter buffer and playout.
	Late              atomic.Uint64 // packets arriving after their playout time
	BufferDrops       atomic.Uint64 // packets the buffer discarded (delay reduction, overflow)
	FramesPlayed      atomic.Uint64 // 20 ms frames read by the engine
	FramesConcealed   atomic.Uint64 // of which held concealed audio
	BufferDelay       atomic.Int64  // the buffer's current delay, ns
	BufferDelayTarget atomic.Int64  // its current target, ns

	// Send side.
	PacketsSent atomic.Uint64
	BytesSent   atomic.Uint64
	Underflows  atomic.Uint64 // ticks with no audio queued (silence sent)

	// What the peer reports in RTCP receiver reports about our stream, and
	// the round trip measured from them (RFC 3550 section 6.4.1).
	RemoteLossFraction atomic.Uint32 // last fraction lost, in 1/256
	RemoteLost         atomic.Int64  // cumulative lost
	RemoteJitter       atomic.Int64  // ns
	RTT                atomic.Int64  // ns, 0 until measured

	// Conversation, from the engine's voice activity (see Talk).
	DeadAir  atomic.Int64 // ns of silence on both sides beyond the threshold
	TalkOver atomic.Int64 // ns with both sides speaking

	// DTMF digits received and sent.
	DigitsReceived atomic.Uint64
	DigitsSent     atomic.Uint64
}

// Set stores v in m unless m holds it already. For a figure the hot path
// updates often but that seldom changes: an atomic store is a locked
// instruction (XCHG on amd64), which on a call's cold cache line stalls
// the pacer for the whole miss at every packet of every call, where a
// load is an ordinary one. A single writer may use it; it does not order
// concurrent writers.
func Set(m *atomic.Uint64, v uint64) {
	if m.Load() != v {
		m.Store(v)
	}
}

// SetInt is Set for an Int64.
func SetInt(m *atomic.Int64, v int64) {
	if m.Load() != v {
		m.Store(v)
	}
}

// SetMax raises m to v if v is larger.
func SetMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

// Snapshot is a plain copy of Metrics with derived figures, for storage and
// reports. JSON names are snake_case; durations are in milliseconds.
type Snapshot struct {
	Codec             string  `json:"codec"`
	PacketsReceived   uint64  `json:"packets_received"`
	PacketsExpected   uint64  `json:"packets_expected"`
	PacketsLost       uint64  `json:"packets_lost"`
	LossBursts        uint64  `json:"loss_bursts"`
	Duplicates        uint64  `json:"duplicates"`
	SourceDrops       uint64  `json:"source_drops"`
	Malformed         uint64  `json:"malformed"`
	Late              uint64  `json:"late"`
	BufferDrops       uint64  `json:"buffer_drops"`
	FramesPlayed      uint64  `json:"frames_played"`
	FramesConcealed   uint64  `json:"frames_concealed"`
	PacketsSent       uint64  `json:"packets_sent"`
	BytesSent         uint64  `json:"bytes_sent"`
	BytesReceived     uint64  `json:"bytes_received"`
	Underflows        uint64  `json:"underflows"`
	DigitsReceived    uint64  `json:"digits_received"`
	DigitsSent        uint64  `json:"digits_sent"`
	LossPercent       float64 `json:"loss_percent"`
	JitterMs          float64 `json:"jitter_ms"`
	JitterMaxMs       float64 `json:"jitter_max_ms"`
	BufferDelayMs     float64 `json:"buffer_delay_ms"`
	RTTMs             float64 `json:"rtt_ms"`
	RemoteLossPercent float64 `json:"remote_loss_percent"`
	RemoteJitterMs    float64 `json:"remote_jitter_ms"`
	DeadAirMs         float64 `json:"dead_air_ms"`
	TalkOverMs        float64 `json:"talk_over_ms"`
	R                 float64 `json:"r_factor"`
	MOS               float64 `json:"mos"`
}

func msOf(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }

// Snapshot copies the counters and rates the call with the E-model for
// codec. LossPercent is the network's loss, what a capture of the call
// shows (RFC 3550 A.3); the E-model rates what the listener heard, which
// also misses the packets the jitter buffer dropped for lateness. The
// delay is half the RTT (when measured) plus the jitter buffer's delay.
func (m *Metrics) Snapshot(codec Codec) Snapshot {
	s := Snapshot{
		Codec:           codec.Name,
		PacketsReceived: m.PacketsReceived.Load(),
		PacketsExpected: m.PacketsExpected.Load(),
		PacketsLost:     m.PacketsLost.Load(),
		LossBursts:      m.LossBursts.Load(),
		Duplicates:      m.Duplicates.Load(),
		SourceDrops:     m.SourceDrops.Load(),
		Malformed:       m.Malformed.Load(),
		Late:            m.Late.Load(),
		BufferDrops:     m.BufferDrops.Load(),
		FramesPlayed:    m.FramesPlayed.Load(),
		FramesConcealed: m.FramesConcealed.Load(),
		PacketsSent:     m.PacketsSent.Load(),
		BytesSent:       m.BytesSent.Load(),
		BytesReceived:   m.BytesReceived.Load(),
		Underflows:      m.Underflows.Load(),
		DigitsReceived:  m.DigitsReceived.Load(),
		DigitsSent:      m.DigitsSent.Load(),
		JitterMs:        msOf(m.Jitter.Load()),
		JitterMaxMs:     msOf(m.JitterMax.Load()),
		BufferDelayMs:   msOf(m.BufferDelay.Load()),
		RTTMs:           msOf(m.RTT.Load()),
		RemoteJitterMs:  msOf(m.RemoteJitter.Load()),
		DeadAirMs:       msOf(m.DeadAir.Load()),
		TalkOverMs:      msOf(m.TalkOver.Load()),
	}
	s.RemoteLossPercent = float64(m.RemoteLossFraction.Load()) * 100 / 256
	var heardPercent float64
	if s.PacketsExpected > 0 {
		s.LossPercent = 100 * float64(min(s.PacketsLost, s.PacketsExpected)) / float64(s.PacketsExpected)
		heardPercent = 100 * float64(min(s.PacketsLost+s.Late, s.PacketsExpected)) / float64(s.PacketsExpected)
	}
	e := EModel{
		Codec:       codec,
		LossPercent: heardPercent,
		BurstRatio:  BurstRatio(s.PacketsLost, s.LossBursts, s.PacketsExpected),
		Delay:       time.Duration(m.RTT.Load()/2 + m.BufferDelay.Load()),
	}
	s.R = e.R()
	s.MOS = e.MOS()
	return s
}
