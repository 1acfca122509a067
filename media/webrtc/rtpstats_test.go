package webrtc

import (
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/quality"
)

func TestRTPStatsLossWrapAndJitter(t *testing.T) {
	m := &quality.Metrics{}
	r := rtpStats{m: m}
	base := time.Now()
	seq := uint16(65530)
	// 20 packets across the sequence wrap; 3 lost in two bursts (one of
	// two packets, one of one); one arrives 10 ms late.
	lost := map[int]bool{4: true, 5: true, 12: true}
	for i := range 20 {
		if lost[i] {
			continue
		}
		at := base.Add(time.Duration(i) * 20 * time.Millisecond)
		if i == 15 {
			at = at.Add(10 * time.Millisecond)
		}
		r.packet(seq+uint16(i), uint32(1000+i*960), at, 60)
	}
	require.Equal(t, uint64(17), m.PacketsReceived.Load())
	require.Equal(t, uint64(20), m.PacketsExpected.Load())
	require.Equal(t, uint64(3), m.PacketsLost.Load())
	require.Equal(t, uint64(2), m.LossBursts.Load())
	require.Equal(t, uint64(17*60), m.BytesReceived.Load())
	// One packet 10 ms late makes two 10 ms transit changes (into the
	// delay and out of it): J = 10/16, then J + (10 - J)/16, then decays.
	j1 := 10.0 / 16
	j2 := j1 + (10-j1)/16
	require.InDelta(t, j2*float64(time.Millisecond), float64(m.JitterMax.Load()), float64(20*time.Microsecond))
	require.Greater(t, m.Jitter.Load(), int64(0))
	require.Less(t, m.Jitter.Load(), m.JitterMax.Load())
	// A reordered old packet does not move the highest sequence.
	r.packet(seq+3, uint32(1000+3*960), base.Add(time.Second), 60)
	require.Equal(t, uint64(20), m.PacketsExpected.Load())
	require.Equal(t, uint64(2), m.PacketsLost.Load())
}

func TestReceptionReportRTT(t *testing.T) {
	s := bareSession(t, Config{})
	now := time.Now()
	// An SR sent 250 ms ago, held 100 ms by the browser: RTT 150 ms.
	lsr := compactNTP(now.Add(-250 * time.Millisecond))
	s.receptionReport(rtcp.ReceptionReport{SSRC: 1, FractionLost: 64, TotalLost: 0xfffffe, Jitter: 480, LastSenderReport: lsr, Delay: 65536 / 10}, now)
	m := s.m
	require.InDelta(t, float64(150*time.Millisecond), float64(m.RTT.Load()), float64(time.Millisecond))
	require.Equal(t, uint32(64), m.RemoteLossFraction.Load())
	require.Equal(t, int64(-2), m.RemoteLost.Load(), "24-bit signed cumulative loss")
	require.Equal(t, int64(10*time.Millisecond), m.RemoteJitter.Load())
	require.Equal(t, uint64(1), s.c.reports.Load())
	// No SR yet: no RTT.
	s2 := bareSession(t, Config{})
	s2.receptionReport(rtcp.ReceptionReport{SSRC: 1}, now)
	require.Zero(t, s2.m.RTT.Load())
}
