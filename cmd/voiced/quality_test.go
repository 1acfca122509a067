package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/media/quality"
)

// requireMediaQuality checks a finished call's quality object as the API
// returns it: media flowed both ways with little loss and a plausible
// MOS, in codec.
func requireMediaQuality(t *testing.T, v any, codec string) map[string]any {
	t.Helper()
	q, ok := v.(map[string]any)
	require.True(t, ok, "the call has a quality object: %v", v)
	t.Logf("call quality: %v", q)
	require.Equal(t, codec, q["codec"])
	require.Greater(t, q["packets_received"], 20.0, "%v", q)
	// The agent's side may be short: browser calls send nothing while the
	// agent is silent (Opus DTX).
	require.Greater(t, q["packets_sent"], 0.0, "%v", q)
	require.Less(t, q["loss_percent"], 5.0, "%v", q)
	require.GreaterOrEqual(t, q["mos"], 1.0, "%v", q)
	require.LessOrEqual(t, q["mos"], 4.5, "%v", q)
	// A clean loopback path rates well. A test machine busy with other
	// test packages (and, for browser calls, Chromium) can make the path
	// itself jittery: in one make test a browser call saw a 26.8 ms jitter
	// spike and rated 2.94 with nothing lost, which in the E-model means
	// about 0.4 s of mouth-to-ear delay, most of it the jitter buffer's.
	// So the bound holds only for a path that measured clean.
	if jm, _ := q["jitter_max_ms"].(float64); jm <= 10 {
		require.Greater(t, q["mos"], 3.5, "a clean loopback path rates well: %v", q)
	}
	for _, k := range []string{"jitter_ms", "jitter_max_ms", "jitter_buffer_drops", "concealed_ms", "dead_air_ms", "talk_over_ms"} {
		require.GreaterOrEqual(t, q[k], 0.0, "%s: %v", k, q)
	}
	require.Contains(t, q, "rtt_ms")
	require.Contains(t, q, "response_latency_ms")
	return q
}

// requireAnswered checks the quality's response latency covers at least
// one answered caller turn.
func requireAnswered(t *testing.T, q map[string]any) {
	t.Helper()
	l, ok := q["response_latency_ms"].(map[string]any)
	require.True(t, ok, "the agent's response latency was measured: %v", q)
	require.GreaterOrEqual(t, l["turns"], 1.0, "%v", l)
	require.Greater(t, l["max"], 0.0, "%v", l)
	require.LessOrEqual(t, l["p50"], l["p95"])
	require.LessOrEqual(t, l["p95"], l["max"])
	require.Less(t, l["max"], 30000.0, "%v", l)
}

// scrape reads base's /metrics as series (name with its labels, as
// printed) to values.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	// A live node's exposition passes Prometheus's strict parser and linter.
	if p, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(p, "check", "metrics")
		cmd.Stdin = bytes.NewReader(b)
		lint, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool check metrics:\n%s", lint)
	} else if os.Getenv("CI") == "true" {
		t.Fatal("promtool not installed (Debian package prometheus)")
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// The node's media series (control.SetMediaStats).
const (
	seriesTicks    = `voiced_media_pacer_ticks_total`
	seriesSendErrs = `voiced_media_rtp_send_errors_total`
	seriesLateP50  = `voiced_media_pacer_tick_lateness_seconds{quantile="0.5"}`
	seriesLateP99  = `voiced_media_pacer_tick_lateness_seconds{quantile="0.99"}`
	seriesLateMax  = `voiced_media_pacer_tick_lateness_seconds{quantile="1"}`
	seriesCostP50  = `voiced_media_pacer_tick_cost_seconds{quantile="0.5"}`
	seriesCostMax  = `voiced_media_pacer_tick_cost_seconds{quantile="1"}`
	seriesPhoneIn  = `voiced_media_rtp_packets_total{direction="in",front_door="phone"}`
	seriesPhoneOut = `voiced_media_rtp_packets_total{direction="out",front_door="phone"}`
	seriesPhoneSes = `voiced_media_sessions{front_door="phone"}`
	seriesWebIn    = `voiced_media_rtp_packets_total{direction="in",front_door="browser"}`
	seriesWebOut   = `voiced_media_rtp_packets_total{direction="out",front_door="browser"}`
	seriesWebSes   = `voiced_media_sessions{front_door="browser"}`
)

// requireSeries checks every name is on /metrics.
func requireSeries(t *testing.T, m map[string]float64, names ...string) {
	t.Helper()
	for _, n := range names {
		_, ok := m[n]
		require.True(t, ok, "%s is on /metrics", n)
	}
}

// TestMediaStatsCounters: the node's packet counters sum the live
// sessions with the ended ones and never go back, the lock taken only
// when a session starts or ends and at scrape.
func TestMediaStatsCounters(t *testing.T) {
	s := newMediaStats()
	var a, b quality.Metrics
	s.add(doorPhone, &a)
	s.add(doorBrowser, &b)
	a.PacketsReceived.Store(100)
	a.PacketsSent.Store(90)
	a.PacketsLost.Store(3)
	b.PacketsReceived.Store(7)
	st := s.read()
	require.Equal(t, control.PacketCounts{In: 100, Out: 90, Lost: 3}, st.Packets[doorPhone])
	require.Equal(t, control.PacketCounts{In: 7}, st.Packets[doorBrowser])
	require.Equal(t, 1, st.Sessions[doorPhone])
	require.Nil(t, st.Pacer)

	// A reordered packet lowers the session's loss; the counter holds.
	a.PacketsLost.Store(2)
	require.Equal(t, uint64(3), s.read().Packets[doorPhone].Lost)
	// The session ends: its totals stay, it is no longer live.
	a.PacketsReceived.Store(150)
	s.done(&a)
	s.done(&a) // once
	var c quality.Metrics
	c.PacketsReceived.Store(10)
	s.add(doorPhone, &c)
	st = s.read()
	require.Equal(t, control.PacketCounts{In: 160, Out: 90, Lost: 3}, st.Packets[doorPhone])
	require.Equal(t, 1, st.Sessions[doorPhone])
	s.done(&c)
	require.Equal(t, 0, s.read().Sessions[doorPhone])

	var nilStats *mediaStats
	nilStats.add(doorPhone, &c) // telephony without /metrics wiring
	nilStats.done(&c)
}

// TestCallQualityFromSnapshot: what a call stores from its media figures.
func TestCallQualityFromSnapshot(t *testing.T) {
	var m quality.Metrics
	m.PacketsExpected.Store(500)
	m.PacketsReceived.Store(495)
	m.PacketsLost.Store(5)
	m.PacketsSent.Store(480)
	m.Late.Store(2)
	m.BufferDrops.Store(1)
	m.FramesConcealed.Store(6)
	m.Jitter.Store(int64(2 * time.Millisecond))
	m.DeadAir.Store(int64(3500 * time.Millisecond))
	var lat quality.Latency
	t0 := time.Now()
	lat.CallerTurn(t0)
	lat.AgentTurn(t0.Add(800 * time.Millisecond))
	q := callQuality(m.Snapshot(quality.PCMA), &lat)
	require.Equal(t, "PCMA", *q.Codec)
	require.Equal(t, int64(495), *q.PacketsReceived)
	require.Equal(t, int64(3), *q.JitterBufferDrops, "late and dropped")
	require.Equal(t, int64(120), *q.ConcealedMS)
	require.Equal(t, int64(3500), *q.DeadAirMS)
	require.InDelta(t, 1.0, *q.LossPercent, 1e-9, "the network lost 5 of 500; the 2 late are buffer drops")
	require.Nil(t, q.RTTMS, "no RTCP report yet")
	require.Greater(t, *q.MOS, 3.5)
	require.Equal(t, &control.ResponseLatency{P50: 800, P95: 800, Max: 800, Turns: 1}, q.ResponseLatencyMS)

	// Nothing received: no loss, jitter or MOS to report.
	var silent quality.Metrics
	silent.PacketsSent.Store(50)
	q = callQuality(silent.Snapshot(quality.PCMU), nil)
	require.Nil(t, q.MOS)
	require.Nil(t, q.LossPercent)
	require.Nil(t, q.JitterMS)
	require.Nil(t, q.ResponseLatencyMS)
	require.Equal(t, int64(50), *q.PacketsSent)
}
