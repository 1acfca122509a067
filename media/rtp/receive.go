package rtp

import (
	"errors"
	"net"
	"net/netip"
	"time"

	prtp "github.com/pion/rtp"
	"github.com/voiced/voiced/media/jitter"
	"github.com/voiced/voiced/media/quality"
)

// receiveRTCP is the RTCP socket's goroutine (without RTCP multiplexing),
// for the session's life: one report every few seconds, so a blocking
// read costs nothing worth a tick's drain. RTP comes through drain.
func (s *Session) receiveRTCP(conn *net.UDPConn) {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	var pkt prtp.Packet
	var digits digitBatch
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.handle(buf[:n], unmap(from), time.Now(), true, &pkt, &digits)
	}
}

// unmap turns IPv4-mapped IPv6 sources (from a dual-stack socket) into
// IPv4, so they compare equal to the addresses in SDP.
func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// digitBatch collects digits found under the lock, to call OnDTMF after it.
type digitBatch struct {
	d  [4]Digit
	n  int
	fn func(Digit)
}

func (b *digitBatch) add(d Digit) {
	if b.n < len(b.d) {
		b.d[b.n] = d
		b.n++
	}
}

func (s *Session) deliver(b *digitBatch) {
	for i := range b.n {
		s.m.DigitsReceived.Add(1)
		if b.fn != nil {
			b.fn(b.d[i])
		}
	}
	b.n = 0
}

// handle classifies one datagram. RTCP is told apart from RTP on a
// multiplexed port by its packet type (RFC 5761 section 4).
func (s *Session) handle(data []byte, from netip.AddrPort, now time.Time, rtcpSocket bool, pkt *prtp.Packet, digits *digitBatch) {
	if len(data) < 8 || data[0]>>6 != 2 {
		s.m.Malformed.Add(1)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	digits.fn = s.onDTMF
	if !s.started {
		return // no negotiated media yet
	}
	if rtcpSocket || (data[1] >= 192 && data[1] <= 223) {
		s.handleRTCP(data, from, now, rtcpSocket)
		return
	}
	if len(data) < 12 {
		s.m.Malformed.Add(1)
		return
	}
	p := &s.params
	pt := data[1] & 0x7f
	if pt != p.RecvPT && (p.DTMF.Name == "" || pt != p.RecvDTMFPT) && pt != PayloadCN {
		s.m.Malformed.Add(1)
		return
	}
	if s.latched && from != s.peer {
		s.m.SourceDrops.Add(1)
		return
	}
	if err := pkt.Unmarshal(data); err != nil {
		s.m.Malformed.Add(1)
		return
	}
	if !s.latched {
		// Symmetric RTP: the first valid packet fixes the peer, and our
		// packets follow it there (through any NAT).
		s.latched, s.peer = true, from
		s.txMu.Lock()
		s.tx.dst = from
		s.txMu.Unlock()
		s.log.Info("rtp: latched peer", "remote", from.String())
	}
	s.touchRecv(now)
	s.dtmf.expire(now, digits.add)
	if !s.account(pkt, now, pt == p.RecvPT) && pt == p.RecvPT {
		return
	}
	switch pt {
	case p.RecvPT:
		s.rx.transit(pkt.Timestamp, now)
		j := int64(s.rx.jitterDur())
		s.m.Jitter.Store(j)
		quality.SetMax(&s.m.JitterMax, j)
		s.push(pkt, now, false)
	case PayloadCN:
		s.push(pkt, now, true)
	default:
		s.dtmf.packet(pkt.SSRC, pkt.Timestamp, pkt.Payload, now, digits.add)
	}
}

// account counts a packet of the peer's stream and reports whether it
// belongs to it. Audio, comfort noise and telephone-event packets share
// the stream's SSRC and sequence numbers (RFC 4733 section 2.1), so all
// count: a DTMF digit's packets left out were gaps, which read as loss.
// Only audio starts or switches the stream: events some gateways send
// under an SSRC of their own are not counted (their digits still are).
func (s *Session) account(pkt *prtp.Packet, now time.Time, audio bool) bool {
	if !s.rx.started || pkt.SSRC != s.rx.ssrc {
		if !audio {
			return false
		}
		if s.rx.started {
			// A new stream from the same peer (a re-INVITE, a media
			// server switch): start over.
			s.log.Info("rtp: new source", "ssrc", pkt.SSRC)
			s.rxc.buf.Reset()
		}
		s.rx.reset(pkt.SSRC, pkt.SequenceNumber, s.params.Codec.ClockRate, now)
	}
	if !s.rx.update(pkt.SequenceNumber, now) {
		return false
	}
	m := &s.m
	m.PacketsReceived.Add(1)
	m.BytesReceived.Add(uint64(len(pkt.Payload)))
	m.PacketsExpected.Store(s.rx.expected())
	quality.Set(&m.PacketsLost, uint64(max(s.rx.lost(), 0)))
	quality.Set(&m.LossBursts, s.rx.bursts)
	return true
}

func (s *Session) push(pkt *prtp.Packet, now time.Time, cn bool) {
	samples := 0
	if !cn {
		samples = s.rxc.samples(pkt.Payload)
	}
	v := s.rxc.buf.Push(jitter.Packet{
		Seq:       pkt.SequenceNumber,
		Timestamp: pkt.Timestamp,
		Marker:    pkt.Marker,
		CN:        cn,
		Samples:   samples,
		Payload:   pkt.Payload,
	}, now)
	if v == jitter.Duplicate {
		s.m.Duplicates.Add(1)
	}
}

// handleRTCP takes a compound RTCP packet: the peer's sender report (for
// our LSR/DLSR), its reception report about our stream (loss, jitter and
// the round trip, RFC 3550 section 6.4.1) and BYE.
func (s *Session) handleRTCP(data []byte, from netip.AddrPort, now time.Time, rtcpSocket bool) {
	if rtcpSocket {
		// Symmetric RTCP: only the peer's host may send it; its port is
		// learnt like the RTP one.
		if s.latched && from.Addr() != s.peer.Addr() {
			s.m.SourceDrops.Add(1)
			return
		}
		if !s.rtcpPeer.IsValid() {
			s.rtcpPeer = from
			s.txMu.Lock()
			s.tx.rtcpDst = from
			s.txMu.Unlock()
		}
	} else if s.latched && from != s.peer {
		s.m.SourceDrops.Add(1)
		return
	}
	v := rtcpIn{s: s, now: now}
	if !parseRTCP(data, &v) {
		s.m.Malformed.Add(1)
	}
}

// rtcpIn applies parsed RTCP to the session, under mu.
type rtcpIn struct {
	s   *Session
	now time.Time
}

func (v *rtcpIn) senderReport(ssrc uint32, ntp uint64) {
	if v.s.rx.started && ssrc == v.s.rx.ssrc {
		v.s.rx.lastSR = uint32(ntp >> 16)
		v.s.rx.lastSRAt = v.now
	}
}

func (v *rtcpIn) receptionReport(_ uint32, r reportBlock) {
	s := v.s
	if r.ssrc != s.ssrc {
		return
	}
	s.m.RemoteLossFraction.Store(uint32(r.fractionLost))
	s.m.RemoteLost.Store(int64(r.totalLost))
	if c := s.params.Codec.ClockRate; c > 0 {
		s.m.RemoteJitter.Store(int64(r.jitter) * int64(time.Second) / int64(c))
	}
	if r.lsr != 0 {
		// RTT = A - LSR - DLSR, in 1/65536 s.
		rtt := int64(ntpMiddle(v.now)) - int64(r.lsr) - int64(r.dlsr)
		if rtt >= 0 && rtt < 1<<16*10 {
			s.m.RTT.Store(rtt * int64(time.Second) >> 16)
		}
	}
}

func (v *rtcpIn) bye(ssrc uint32) {
	if v.s.rx.started && ssrc == v.s.rx.ssrc {
		v.s.remote.byeAt = v.now
	}
}
