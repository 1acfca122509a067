package control

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the control plane's Prometheus series, on a registry of the
// server's own (no package-level state).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voiced_http_requests_total",
		Help: "HTTP requests by method, route pattern and status code.",
	}, []string{"method", "route", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "voiced_http_request_duration_seconds",
		Help:    "HTTP request latency by method and route pattern.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"method", "route"})
	m.reg.MustRegister(m.requests, m.duration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(d.Seconds())
}

func (m *metrics) handler() any {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// MediaStats are the node's media figures at scrape time, read by a
// function the media side hands to SetMediaStats (control does not import
// media). Counts are totals since the node started.
type MediaStats struct {
	// Pacer is the node's send clock; nil when there is none.
	Pacer *PacerStats
	// Sessions are the media sessions in progress by front door (phone,
	// browser, realtime).
	Sessions map[string]int
	// Packets are RTP packet totals by front door.
	Packets map[string]PacketCounts
	// SendErrors counts RTP packets the kernel refused to send (a full
	// socket buffer, an unreachable peer).
	SendErrors uint64
	// SIP is the SIP server's drop counters; nil when telephony is off.
	SIP *SIPStats
}

// SIPStats are the SIP server's counts of messages it dropped unanswered.
type SIPStats struct {
	// Dropped counts messages and connections the rate, size and
	// connection limits refused.
	Dropped uint64
	// Unparseable counts messages too malformed to address a response to
	// (malformed responses, requests without a usable Via, bad ACKs).
	Unparseable uint64
}

// PacerStats are the node pacer's counters and its ticks' lateness and
// cost (time from start to end) quantiles.
type PacerStats struct {
	Streams                   int
	Ticks, Skipped            uint64
	LateP50, LateP99, LateMax time.Duration
	CostP50, CostP99, CostMax time.Duration
	// The count and sum of the lateness and cost recorded.
	LateN, CostN     uint64
	LateSum, CostSum time.Duration
}

// PacketCounts are RTP packets received, sent and lost.
type PacketCounts struct{ In, Out, Lost uint64 }

// SetMediaStats publishes f's figures on /metrics: f runs at each scrape
// (never on the media path), so it should read counters the media side
// keeps anyway. Call it once.
func (s *Server) SetMediaStats(f func() MediaStats) {
	s.metrics.reg.MustRegister(mediaCollector{f})
}

// MediaMetrics is the /metrics handler of a media node, which runs no
// Server: its media figures (f, as SetMediaStats takes it) and the Go
// runtime's and process's series.
func MediaMetrics(f func() MediaStats) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(mediaCollector{f}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

var (
	descPacerLate = prometheus.NewDesc("voiced_media_pacer_tick_lateness_seconds",
		"How late the node pacer's ticks sent their packets (a tick starts early by design; its sends are due at the tick's time), a summary: quantiles 0.5 and 0.99 (bucket upper edges, within 6.25%), 1 the maximum seen.", nil, nil)
	descPacerCost = prometheus.NewDesc("voiced_media_pacer_tick_cost_seconds",
		"How long the node pacer's ticks ran (every call's send, receive and processing for one period), a summary: quantiles 0.5 and 0.99 (bucket upper edges, within 6.25%), 1 the maximum seen; near the 20 ms period, ticks start late.", nil, nil)
	descPacerTicks   = prometheus.NewDesc("voiced_media_pacer_ticks_total", "Ticks the node pacer ran.", nil, nil)
	descPacerSkipped = prometheus.NewDesc("voiced_media_pacer_ticks_skipped_total", "Ticks the node pacer dropped because it fell too far behind.", nil, nil)
	descSendErrors   = prometheus.NewDesc("voiced_media_rtp_send_errors_total", "RTP packets the kernel refused to send (a full socket buffer, an unreachable peer).", nil, nil)
	descPacerStreams = prometheus.NewDesc("voiced_media_pacer_streams", "Streams on the node pacer.", nil, nil)
	descSessions     = prometheus.NewDesc("voiced_media_sessions", "Media sessions in progress by front door.", []string{"front_door"}, nil)
	descPackets      = prometheus.NewDesc("voiced_media_rtp_packets_total", "RTP packets by front door and direction (in, out).", []string{"front_door", "direction"}, nil)
	descLost         = prometheus.NewDesc("voiced_media_rtp_packets_lost_total", "RTP packets the node expected from callers and never received, by front door.", []string{"front_door"}, nil)
	descSIPDropped   = prometheus.NewDesc("voiced_sip_messages_dropped_total",
		"SIP messages the node dropped without an answer, by reason: rate (the rate, size and connection limits), unparseable (too malformed to address a response to).", []string{"reason"}, nil)
)

// mediaCollector turns MediaStats into series at scrape time.
type mediaCollector struct{ read func() MediaStats }

func (c mediaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPacerLate, descPacerCost, descPacerTicks, descPacerSkipped, descPacerStreams, descSessions, descPackets, descLost, descSendErrors, descSIPDropped} {
		ch <- d
	}
}

func (c mediaCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.read()
	if p := st.Pacer; p != nil {
		// Summaries, not gauges with a quantile label: strict parsers
		// (promtool check metrics) accept quantile only on a summary.
		ch <- prometheus.MustNewConstSummary(descPacerLate, p.LateN, p.LateSum.Seconds(),
			map[float64]float64{0.5: p.LateP50.Seconds(), 0.99: p.LateP99.Seconds(), 1: p.LateMax.Seconds()})
		ch <- prometheus.MustNewConstSummary(descPacerCost, p.CostN, p.CostSum.Seconds(),
			map[float64]float64{0.5: p.CostP50.Seconds(), 0.99: p.CostP99.Seconds(), 1: p.CostMax.Seconds()})
		ch <- prometheus.MustNewConstMetric(descPacerTicks, prometheus.CounterValue, float64(p.Ticks))
		ch <- prometheus.MustNewConstMetric(descPacerSkipped, prometheus.CounterValue, float64(p.Skipped))
		ch <- prometheus.MustNewConstMetric(descPacerStreams, prometheus.GaugeValue, float64(p.Streams))
	}
	ch <- prometheus.MustNewConstMetric(descSendErrors, prometheus.CounterValue, float64(st.SendErrors))
	if s := st.SIP; s != nil {
		ch <- prometheus.MustNewConstMetric(descSIPDropped, prometheus.CounterValue, float64(s.Dropped), "rate")
		ch <- prometheus.MustNewConstMetric(descSIPDropped, prometheus.CounterValue, float64(s.Unparseable), "unparseable")
	}
	for door, n := range st.Sessions {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n), door)
	}
	for door, p := range st.Packets {
		ch <- prometheus.MustNewConstMetric(descPackets, prometheus.CounterValue, float64(p.In), door, "in")
		ch <- prometheus.MustNewConstMetric(descPackets, prometheus.CounterValue, float64(p.Out), door, "out")
		ch <- prometheus.MustNewConstMetric(descLost, prometheus.CounterValue, float64(p.Lost), door)
	}
}
