package call

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media/quality"
)

// TestMediaStatsCounters: the node's packet counters sum the live
// sessions with the ended ones and never go back, the lock taken only
// when a session starts or ends and at scrape.
func TestMediaStatsCounters(t *testing.T) {
	s := NewStats()
	var a, b quality.Metrics
	s.add(doorPhone, &a)
	s.add(doorBrowser, &b)
	a.PacketsReceived.Store(100)
	a.PacketsSent.Store(90)
	a.PacketsLost.Store(3)
	b.PacketsReceived.Store(7)
	st := s.Read()
	require.Equal(t, control.PacketCounts{In: 100, Out: 90, Lost: 3}, st.Packets[doorPhone])
	require.Equal(t, control.PacketCounts{In: 7}, st.Packets[doorBrowser])
	require.Equal(t, 1, st.Sessions[doorPhone])
	require.Nil(t, st.Pacer)

	// A reordered packet lowers the session's loss; the counter holds.
	a.PacketsLost.Store(2)
	require.Equal(t, uint64(3), s.Read().Packets[doorPhone].Lost)
	// The session ends: its totals stay, it is no longer live.
	a.PacketsReceived.Store(150)
	s.done(&a)
	s.done(&a) // once
	var c quality.Metrics
	c.PacketsReceived.Store(10)
	s.add(doorPhone, &c)
	st = s.Read()
	require.Equal(t, control.PacketCounts{In: 160, Out: 90, Lost: 3}, st.Packets[doorPhone])
	require.Equal(t, 1, st.Sessions[doorPhone])
	s.done(&c)
	require.Equal(t, 0, s.Read().Sessions[doorPhone])

	var nilStats *Stats
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
	require.Equal(t, &calllog.ResponseLatency{P50: 800, P95: 800, Max: 800, Turns: 1}, q.ResponseLatencyMS)

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
