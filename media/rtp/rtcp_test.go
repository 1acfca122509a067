package rtp

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/quality"
)

// TestRTCPAgainstPion builds our compound packets and decodes them with
// pion/rtcp, an independent implementation, and the other way round.
func TestRTCPAgainstPion(t *testing.T) {
	b := make([]byte, 256)
	si := &senderInfo{ntp: 0x0102030405060708, rtpTS: 9999, packets: 12, octets: 1920}
	block := &reportBlock{ssrc: 0xabc, fractionLost: 26, totalLost: -3, extMaxSeq: 0x1ffff, jitter: 77, lsr: 0x11223344, dlsr: 65536}
	n := appendReport(b, 0x42, si, block)
	n += appendSDES(b[n:], 0x42, "voiced-test")
	n += appendBYE(b[n:], 0x42)
	pkts, err := rtcp.Unmarshal(b[:n])
	require.NoError(t, err)
	require.Len(t, pkts, 3)
	sr := pkts[0].(*rtcp.SenderReport)
	require.Equal(t, uint32(0x42), sr.SSRC)
	require.Equal(t, si.ntp, sr.NTPTime)
	require.Equal(t, uint32(9999), sr.RTPTime)
	require.Equal(t, uint32(12), sr.PacketCount)
	require.Equal(t, uint32(1920), sr.OctetCount)
	require.Len(t, sr.Reports, 1)
	rr := sr.Reports[0]
	require.Equal(t, rtcp.ReceptionReport{SSRC: 0xabc, FractionLost: 26, TotalLost: 0xfffffd, LastSequenceNumber: 0x1ffff, Jitter: 77, LastSenderReport: 0x11223344, Delay: 65536}, rr)
	sdes := pkts[1].(*rtcp.SourceDescription)
	require.Equal(t, uint32(0x42), sdes.Chunks[0].Source)
	require.Equal(t, rtcp.SDESCNAME, sdes.Chunks[0].Items[0].Type)
	require.Equal(t, "voiced-test", sdes.Chunks[0].Items[0].Text)
	require.Equal(t, []uint32{0x42}, pkts[2].(*rtcp.Goodbye).Sources)

	// RR without blocks.
	n = appendReport(b, 7, nil, nil)
	pkts, err = rtcp.Unmarshal(b[:n])
	require.NoError(t, err)
	rr0 := pkts[0].(*rtcp.ReceiverReport)
	require.Equal(t, uint32(7), rr0.SSRC)
	require.Empty(t, rr0.Reports)
	require.Empty(t, rr0.ProfileExtensions)

	// pion-built packets through our parser.
	raw, err := rtcp.Marshal([]rtcp.Packet{
		&rtcp.SenderReport{SSRC: 5, NTPTime: 0xaabbccdd00112233, Reports: []rtcp.ReceptionReport{{SSRC: 6, FractionLost: 3, TotalLost: 0x800001, LastSequenceNumber: 10, Jitter: 4, LastSenderReport: 5, Delay: 6}}},
		&rtcp.ReceiverReport{SSRC: 8, Reports: []rtcp.ReceptionReport{{SSRC: 9, FractionLost: 1}}},
		&rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: 5, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "x"}}}}},
		&rtcp.Goodbye{Sources: []uint32{5, 10}},
	})
	require.NoError(t, err)
	var v recorder
	require.True(t, parseRTCP(raw, &v))
	require.Equal(t, []uint64{0xaabbccdd00112233}, v.srNTP)
	require.Equal(t, []reportBlock{
		{ssrc: 6, fractionLost: 3, totalLost: -0x7fffff, extMaxSeq: 10, jitter: 4, lsr: 5, dlsr: 6},
		{ssrc: 9, fractionLost: 1},
	}, v.blocks)
	require.Equal(t, []uint32{5, 10}, v.byes)

	require.False(t, parseRTCP(raw[:len(raw)-2], &v), "truncated")
	require.False(t, parseRTCP([]byte{0x40, 200, 0, 0, 0, 0, 0, 0}, &v), "version 1")
}

type recorder struct {
	srNTP  []uint64
	blocks []reportBlock
	byes   []uint32
}

func (r *recorder) senderReport(_ uint32, ntp uint64)       { r.srNTP = append(r.srNTP, ntp) }
func (r *recorder) receptionReport(_ uint32, b reportBlock) { r.blocks = append(r.blocks, b) }
func (r *recorder) bye(ssrc uint32)                         { r.byes = append(r.byes, ssrc) }

func TestNTP(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 500_000_000, time.UTC)
	n := ntpTime(at)
	require.Equal(t, uint64(at.Unix()+ntpEpochOffset), n>>32)
	require.Equal(t, uint64(1<<31), n&0xffffffff, "half a second")
	require.Equal(t, uint32(n>>16), ntpMiddle(at))
}

// TestRTCPRoundTrip: two sessions exchange reports every ~100 ms, with and
// without RTCP multiplexing, and each measures the round trip from the
// other's receiver reports (RFC 3550 section 6.4.1).
func TestRTCPRoundTrip(t *testing.T) {
	for _, mux := range []bool{false, true} {
		t.Run(map[bool]string{false: "port+1", true: "mux"}[mux], func(t *testing.T) {
			cfg := Config{RTCPInterval: 100 * time.Millisecond, RTCPMux: mux}
			a, b := pair(t, cfg, codecPCMU, Codec{})
			require.NoError(t, a.SetSource(&tone{hz: 300, amp: 3000, rate: 16000}, 16000))
			require.NoError(t, b.SetSource(&tone{hz: 300, amp: 3000, rate: 16000}, 16000))
			require.Eventually(t, func() bool {
				return a.Metrics().RTT.Load() > 0 && b.Metrics().RTT.Load() > 0
			}, 3*time.Second, 20*time.Millisecond)
			if w := a.tx.batch; w != nil {
				// The reports left with the worker's batch of RTP
				// packets, not with system calls of their own.
				require.Same(t, w, b.tx.batch)
				require.Eventually(t, func() bool {
					return w.sends.Load() >= a.Metrics().PacketsSent.Load()+b.Metrics().PacketsSent.Load()+4
				}, time.Second, 5*time.Millisecond, "sends through the ring: %d", w.sends.Load())
			}
			for _, s := range []*Session{a, b} {
				rtt := time.Duration(s.Metrics().RTT.Load())
				require.Less(t, rtt, 100*time.Millisecond, "loopback round trip (plus scheduling on a busy machine)")
				require.Zero(t, s.Metrics().RemoteLossFraction.Load())
				require.Zero(t, s.Metrics().SourceDrops.Load())
				require.Zero(t, s.Metrics().Malformed.Load())
			}
		})
	}
}

// TestLossReported: a raw peer sends RTP with every tenth packet missing;
// the session counts the loss and reports it in its receiver reports,
// which pion/rtcp decodes.
func TestLossReported(t *testing.T) {
	pacer, ports := newPacer(t), newPorts(t)
	s := newSession(t, Config{RTCPInterval: 300 * time.Millisecond, RTCPMux: true}, pacer, ports)
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	p := Params{Remote: peer.LocalAddr().(*net.UDPAddr).AddrPort(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}
	require.NoError(t, s.Update(p))
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(localhost, s.LocalAddr().Port()))
	start := time.Now()
	for i := range 100 {
		if i%10 != 5 {
			_, err := peer.WriteTo(rtpPacket(0, uint16(60000+i), uint32(160*i), 0xfeed, make([]byte, 160)), to)
			require.NoError(t, err)
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * 20 * time.Millisecond)))
	}
	// Reception is tick-driven: the last packet is read at the pacer's
	// next tick, up to 20 ms after it arrived.
	var snap quality.Snapshot
	require.Eventually(t, func() bool {
		snap = s.Snapshot()
		return snap.PacketsExpected >= 100
	}, time.Second, 5*time.Millisecond)
	require.EqualValues(t, 100, snap.PacketsExpected)
	require.EqualValues(t, 90, snap.PacketsReceived)
	require.EqualValues(t, 10, snap.PacketsLost)
	require.EqualValues(t, 10, snap.LossBursts)
	require.Less(t, snap.MOS, 4.0)

	// Read the session's reports; one of them covers an interval with loss.
	buf := make([]byte, 1500)
	var fractions []uint8
	var total uint32
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && total != 10 {
		peer.SetReadDeadline(deadline)
		n, _, err := peer.ReadFrom(buf)
		require.NoError(t, err)
		if buf[1] < 192 || buf[1] > 223 {
			continue // RTP
		}
		pkts, err := rtcp.Unmarshal(buf[:n])
		require.NoError(t, err)
		var reports []rtcp.ReceptionReport
		switch r := pkts[0].(type) {
		case *rtcp.SenderReport:
			reports = r.Reports
		case *rtcp.ReceiverReport:
			reports = r.Reports
		}
		require.Len(t, reports, 1)
		require.Equal(t, uint32(0xfeed), reports[0].SSRC)
		fractions = append(fractions, reports[0].FractionLost)
		total = reports[0].TotalLost
	}
	require.EqualValues(t, 10, total)
	// Each report's fraction covers the packets since the previous one
	// (RFC 3550 A.3): an interval of 150 to 450 ms holds 7 to 23 packets
	// with one loss in ten, so 1/23 to 3/7 of them (11 to 110 in 1/256).
	lossy := 0
	for _, f := range fractions {
		if f > 0 {
			lossy++
			require.GreaterOrEqual(t, f, uint8(11))
			require.LessOrEqual(t, f, uint8(110))
		}
	}
	require.Positive(t, lossy, "reports carry the loss fraction: %v", fractions)
}
