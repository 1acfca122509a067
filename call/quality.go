package call

import (
	"sync"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
	"github.com/voiced/voiced/media/rtp"
)

// Front doors as the node's media metrics name them.
const (
	doorPhone    = "phone"
	doorBrowser  = "browser"
	doorRealtime = "realtime"
)

// callQuality is what a call with RTP media stores as its quality
// (calllog.CallQuality): the session's snapshot and the engine's response
// latency. Figures that were not measured stay null: rtt_ms before any
// RTCP report, the loss percentage of a stream never received.
func callQuality(s quality.Snapshot, lat *quality.Latency) *calllog.CallQuality {
	i64 := func(v uint64) *int64 { n := int64(v); return &n }
	f64 := func(v float64) *float64 { return &v }
	ms := func(v float64) *int64 { n := int64(v + 0.5); return &n }
	q := &calllog.CallQuality{PacketsSent: i64(s.PacketsSent), PacketsReceived: i64(s.PacketsReceived), PacketsLost: i64(s.PacketsLost),
		JitterMS: f64(s.JitterMs), JitterMaxMS: f64(s.JitterMaxMs), JitterBufferDrops: i64(s.Late + s.BufferDrops),
		ConcealedMS: i64(s.FramesConcealed * uint64(media.FrameDuration/time.Millisecond)),
		MOS:         f64(min(max(s.MOS, 1), 4.5)), DeadAirMS: ms(s.DeadAirMs), TalkOverMS: ms(s.TalkOverMs),
		ResponseLatencyMS: responseLatency(lat)}
	if s.Codec != "" {
		q.Codec = &s.Codec
	}
	if s.PacketsExpected == 0 {
		// Nothing received: no loss, jitter or listening quality to speak of.
		q.JitterMS, q.JitterMaxMS, q.MOS = nil, nil, nil
	} else {
		q.LossPercent = f64(s.LossPercent)
	}
	if s.RTTMs > 0 {
		q.RTTMS = f64(s.RTTMs)
	}
	return q
}

// responseLatency is lat's summary in the call's terms, nil without an
// answered turn.
func responseLatency(lat *quality.Latency) *calllog.ResponseLatency {
	if lat == nil {
		return nil
	}
	s := lat.Summary()
	if s.Turns == 0 {
		return nil
	}
	return &calllog.ResponseLatency{P50: s.P50.Milliseconds(), P95: s.P95.Milliseconds(), Max: s.Max.Milliseconds(), Turns: int64(s.Turns)}
}

// observeTurn feeds a transcript turn's times to lat: a caller turn's
// end, an agent turn's first audio (an agent turn that played nothing,
// Start equal to End, is not an answer).
func observeTurn(lat *quality.Latency, role string, start, end time.Time) {
	switch {
	case role == agent.RoleUser:
		lat.CallerTurn(end)
	case role == agent.RoleAssistant && end.After(start):
		lat.AgentTurn(start)
	}
}

// Stats are the node's media figures for /metrics
// (control.SetMediaStats): the live counters of every call's media session
// (quality.Metrics, atomics the media path updates anyway) summed at
// scrape time, plus the totals of the sessions that ended. The lock is
// taken when a session starts or ends and at scrape, never per packet.
type Stats struct {
	mu    sync.Mutex
	live  map[*quality.Metrics]string // session counters → front door
	ended map[string]control.PacketCounts
	// last is what the previous scrape reported: counters never go back
	// (a late packet can lower a session's loss count).
	last     map[string]control.PacketCounts
	pacer    *pace.Pacer
	sessions map[string]func() int // front doors that count their own sessions
	// sip is the SIP server whose drops the scrape reports (nil: no
	// telephony).
	sip sipCounters
}

// sipCounters are the SIP server's drop counters (sip.Server).
type sipCounters interface {
	Dropped() uint64
	Unparseable() uint64
}

// setSIP names the node's SIP server, whose drops the scrape reports.
func (s *Stats) setSIP(c sipCounters) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.sip = c
	s.mu.Unlock()
}

// SetPacer names the node's pacer, whose timing the scrape reports.
func (s *Stats) SetPacer(p *pace.Pacer) {
	s.mu.Lock()
	s.pacer = p
	s.mu.Unlock()
}

// NewStats returns empty figures.
func NewStats() *Stats {
	return &Stats{live: map[*quality.Metrics]string{}, ended: map[string]control.PacketCounts{}, last: map[string]control.PacketCounts{},
		sessions: map[string]func() int{}}
}

// add counts a session's media from now until done.
func (s *Stats) add(door string, m *quality.Metrics) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.live[m] = door
	s.mu.Unlock()
}

// done folds an ended session's counters into its front door's totals.
func (s *Stats) done(m *quality.Metrics) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	door, ok := s.live[m]
	if !ok {
		return
	}
	delete(s.live, m)
	s.ended[door] = plus(s.ended[door], m)
}

func plus(p control.PacketCounts, m *quality.Metrics) control.PacketCounts {
	return control.PacketCounts{In: p.In + m.PacketsReceived.Load(), Out: p.Out + m.PacketsSent.Load(), Lost: p.Lost + m.PacketsLost.Load()}
}

// Read is the scrape (control.Server.SetMediaStats).
func (s *Stats) Read() control.MediaStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := control.MediaStats{Sessions: map[string]int{doorPhone: 0, doorBrowser: 0}, Packets: map[string]control.PacketCounts{}}
	for _, door := range []string{doorPhone, doorBrowser} {
		out.Packets[door] = s.ended[door]
	}
	for m, door := range s.live {
		out.Sessions[door]++
		out.Packets[door] = plus(out.Packets[door], m)
	}
	for door, p := range out.Packets {
		l := s.last[door]
		p = control.PacketCounts{In: max(p.In, l.In), Out: max(p.Out, l.Out), Lost: max(p.Lost, l.Lost)}
		out.Packets[door], s.last[door] = p, p
	}
	for door, n := range s.sessions {
		out.Sessions[door] = n()
	}
	out.SendErrors = rtp.SendErrors()
	if s.sip != nil {
		out.SIP = &control.SIPStats{Dropped: s.sip.Dropped(), Unparseable: s.sip.Unparseable()}
	}
	if s.pacer != nil {
		st := s.pacer.Stats()
		out.Pacer = &control.PacerStats{Streams: st.Streams, Ticks: st.Ticks, Skipped: st.Skipped, LateP50: st.LateP50, LateP99: st.LateP99, LateMax: st.LateMax,
			CostP50: st.CostP50, CostP99: st.CostP99, CostMax: st.CostMax, LateN: st.LateN, LateSum: st.LateSum, CostN: st.CostN, CostSum: st.CostSum}
	}
	return out
}
