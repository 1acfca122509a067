package rtp

import (
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	prtp "github.com/pion/rtp"

	"github.com/voiced/voiced/media/prefetch"
)

// txState is the send side: everything the pacer's Tick touches, guarded
// by Session.txMu (uncontended except against Update, SetSource, SendDTMF
// and latching).
type txState struct {
	started bool
	params  Params
	gen     uint64 // bumps on a codec change; queued frames of older generations are dropped
	dst     netip.AddrPort
	rtcpDst netip.AddrPort
	mux     bool

	hdr     prtp.Header
	seq     uint16
	ts      uint32
	frameTS uint32 // timestamp units per 20 ms
	marker  bool   // the next audio packet starts a talkspurt
	sent    bool   // an RTP packet went out since the last report
	packets uint32
	octets  uint32
	lastTS  uint32 // timestamp of the last packet sent
	lastAt  time.Time

	silence []byte // encoded silence for this codec
	quiet   bool   // in a silence period with CN (no audio packets)
	cnAt    time.Time

	// Pull mode: the Source and its encoder.
	src     Source
	srcHot  HotLister // hotOf(src) (prefetch.go)
	srcRate int
	srcPCM  []int16
	enc     *encoder

	dtmf dtmfTx

	// batch is the pacer worker's io_uring (NewPacerWorker), or nil: send
	// then writes each packet with its own system call.
	batch *workerIO

	nextRTCP time.Time
	pkt      []byte // this tick's packet buffer (tick): buf or a send slot
	// The buffers of packets sent alone and of RTCP reports, allocated
	// apart: inline they would put 1.7 KB between the send state and the
	// Session's receive fields, which every tick touches too.
	buf  *[1500]byte
	rbuf *[256]byte
}

func (t *txState) init(s *Session) {
	t.buf, t.rbuf = new([1500]byte), new([256]byte)
	t.seq = uint16(rand.Uint32())
	t.ts = rand.Uint32()
	t.marker = true
	t.hdr = prtp.Header{Version: 2, SSRC: s.ssrc}
}

// jittered returns d randomized to [0.5, 1.5) d (RFC 3550 section 6.3.1).
func jittered(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

// update applies new parameters; s.txMu is held.
func (t *txState) update(s *Session, p Params, codecChanged bool) error {
	if codecChanged {
		sil, err := silencePayload(p.Codec)
		if err != nil {
			return err
		}
		if t.src != nil {
			enc, err := newEncoder(p.Codec, t.srcRate)
			if err != nil {
				return err
			}
			t.enc.close()
			t.enc = enc
		}
		t.silence = sil
		t.frameTS = uint32(p.Codec.ClockRate / 50)
		t.gen++
		s.writer.gen.Store(t.gen)
		t.marker = true
	}
	if t.params.Remote != p.Remote || !t.started {
		t.dst = p.Remote
	}
	if !t.started {
		// The first report goes out after some media, half an interval
		// in (RFC 3550 section 6.2 allows the initial halving).
		t.nextRTCP = time.Now().Add(jittered(s.cfg.RTCPInterval) / 2)
	}
	switch {
	case p.RemoteRTCP.IsValid():
		t.rtcpDst = p.RemoteRTCP
	case p.RTCPMux || s.rconn == nil:
		t.rtcpDst = p.Remote
	default:
		t.rtcpDst = netip.AddrPortFrom(p.Remote.Addr(), p.Remote.Port()+1)
	}
	t.mux = p.RTCPMux || s.rconn == nil
	if p.DTMF.Name == "" {
		t.dtmf.flush()
	}
	t.params = p
	t.started = true
	return nil
}

func (t *txState) close() {
	t.enc.close()
	t.enc = nil
}

// tick is the session's send work on the pacer goroutine, once per 20 ms:
// check the media timeout, send RTCP when due, and send one RTP packet (a
// DTMF event, audio, comfort noise or silence). The receive work follows
// in postTick.
func (s *Session) tick(now time.Time) {
	s.txMu.Lock()
	t := &s.tx
	if !t.started {
		s.txMu.Unlock()
		return
	}
	if s.cfg.MediaTimeout > 0 && !s.timedOut.Load() {
		s.checkTimeout(now, t.params.Receive)
	}
	if !now.Before(t.nextRTCP) {
		// RTCP reads the receive statistics under mu, which is taken
		// before txMu everywhere.
		s.txMu.Unlock()
		s.sendRTCP(now)
		s.txMu.Lock()
	}
	defer s.txMu.Unlock()
	if !t.params.Send {
		t.ts += t.frameTS
		t.marker = true
		return
	}
	// The packet is built where it is sent from: in the worker's next
	// send slot, or in t.buf when each packet is its own system call.
	// (Taken after the report, which may have used that slot.)
	t.pkt = t.buf[:]
	if t.batch != nil {
		t.pkt = t.batch.next()
	}
	if t.params.DTMF.Name != "" {
		ts, ev, end, dur, first, ok := t.dtmf.next(t.ts, t.params.DTMF.ClockRate)
		if ok {
			var p [4]byte
			putEvent(p[:], ev, end, dtmfVolume, dur)
			s.send(t, t.params.DTMF.PT, ts, first, p[:], now)
			if end && t.dtmf.ends == 1 {
				s.m.DigitsSent.Add(1)
			}
			t.ts += t.frameTS
			t.marker = true
			return
		}
	}
	payload := s.nextAudio(t)
	if prefetch.Enabled {
		s.gatherTx()
	}
	switch {
	case payload != nil:
		t.quiet = false
		s.send(t, t.params.Codec.PT, t.ts, t.marker, payload, now)
		t.marker = false
	case s.cfg.SendCN && t.params.CN:
		// Comfort noise at the start of silence and every 500 ms, no
		// audio packets in between; the next audio packet is marked.
		s.m.Underflows.Add(1)
		if !t.quiet || now.Sub(t.cnAt) >= 500*time.Millisecond {
			cn := [1]byte{byte(s.cfg.CNLevel)}
			s.send(t, PayloadCN, t.ts, false, cn[:], now)
			t.quiet, t.cnAt = true, now
		}
		t.marker = true
	default:
		s.m.Underflows.Add(1)
		s.send(t, t.params.Codec.PT, t.ts, t.marker, t.silence, now)
		t.marker = false
	}
	t.ts += t.frameTS
}

// nextAudio returns this tick's encoded audio: from the Source in pull
// mode, from the WriteFrame queue otherwise; nil when there is none.
func (s *Session) nextAudio(t *txState) []byte {
	if t.src != nil {
		if !t.src.ReadFrame(t.srcPCM) || t.enc == nil {
			return nil
		}
		n, err := t.enc.encode(t.pkt[12:12+maxPayload], t.srcPCM)
		if err != nil || n <= 2 && t.enc.opus != nil {
			return nil // an encoder error, or an Opus DTX frame: send silence
		}
		return t.pkt[12 : 12+n]
	}
	n := s.queue.pop(t.pkt[12:12+maxPayload], t.gen, s.flushTo.Load())
	if n == 0 {
		return nil
	}
	return t.pkt[12 : 12+n]
}

// sendErrors counts the RTP packets the process's sessions failed to send.
var sendErrors atomic.Uint64

// SendErrors returns how many RTP packets the process's sessions failed to
// send since it started: refused by the kernel (a full socket buffer, an
// unreachable destination), whether sent alone or through a pacer
// worker's io_uring. A packet that failed alone was not counted as sent
// and took no sequence number; one that failed in a batch was (its peer
// sees a gap, as for loss).
func SendErrors() uint64 { return sendErrors.Load() }

// send writes one RTP packet with the next sequence number.
func (s *Session) send(t *txState, pt uint8, ts uint32, marker bool, payload []byte, now time.Time) {
	if !t.dst.IsValid() {
		return
	}
	h := &t.hdr
	h.PayloadType, h.SequenceNumber, h.Timestamp, h.Marker = pt, t.seq, ts, marker
	b := t.pkt
	n, err := h.MarshalTo(b)
	if err != nil {
		return
	}
	if len(payload) > 0 && &payload[0] != &b[n] {
		copy(b[n:], payload)
	}
	n += len(payload)
	if t.batch != nil {
		err = t.batch.commit(s.sock, n, t.dst) // sent at the end of the worker's Ticks
	} else {
		err = s.sock.writeTo(b[:n], t.dst)
	}
	if err != nil {
		sendErrors.Add(1)
		return
	}
	t.seq++
	t.packets++
	t.octets += uint32(len(payload))
	t.sent = true
	t.lastTS, t.lastAt = ts, now
	s.m.PacketsSent.Add(1)
	s.m.BytesSent.Add(uint64(len(payload)))
}

// checkTimeout ends the session's media when the peer should be sending
// and has sent nothing for MediaTimeout; on hold the clock stands still.
func (s *Session) checkTimeout(now time.Time, receiving bool) {
	if !receiving {
		s.touchRecv(now)
		return
	}
	// lastRecv may be up to recvTouchEvery older than the last packet.
	if now.UnixNano()-s.lastRecv.Load() > int64(s.cfg.MediaTimeout+recvTouchEvery) {
		s.timedOut.Store(true)
		s.log.Warn("rtp: media timeout", "timeout", s.cfg.MediaTimeout.String())
		s.finish()
	}
}

// recvTouchEvery is how stale lastRecv may be: the media timeout is
// seconds long, so a stamp at most this old serves as well as a fresh one.
const recvTouchEvery = 100 * time.Millisecond

// touchRecv notes at now that the peer is sending (or on hold, need not).
// It stores only when the stamp is recvTouchEvery old, for the reason of
// quality.Set: a stamp changes at every packet.
func (s *Session) touchRecv(now time.Time) {
	if t := now.UnixNano(); t-s.lastRecv.Load() >= int64(recvTouchEvery) {
		s.lastRecv.Store(t)
	}
}

// sendRTCP sends a compound report: an SR if we sent RTP since the last
// report (RR otherwise) with a reception report block when the peer sends
// to us, and our CNAME (RFC 3550 section 6.1).
func (s *Session) sendRTCP(now time.Time) {
	var block reportBlock
	have := false
	s.mu.Lock()
	if s.rx.started {
		have = true
		block = reportBlock{
			ssrc:         s.rx.ssrc,
			fractionLost: s.rx.interval(),
			totalLost:    int32(min(max(s.rx.lost(), -0x800000), 0x7fffff)),
			extMaxSeq:    s.rx.extMax(),
			jitter:       s.rx.jitterTS(),
		}
		if !s.rx.lastSRAt.IsZero() {
			block.lsr = s.rx.lastSR
			block.dlsr = uint32(now.Sub(s.rx.lastSRAt) * 65536 / time.Second)
		}
	}
	s.mu.Unlock()

	s.txMu.Lock()
	defer s.txMu.Unlock()
	t := &s.tx
	t.nextRTCP = now.Add(jittered(s.cfg.RTCPInterval))
	var si *senderInfo
	if t.sent {
		elapsed := now.Sub(t.lastAt)
		si = &senderInfo{
			ntp:     ntpTime(now),
			rtpTS:   t.lastTS + uint32(int64(elapsed)*int64(t.params.Codec.ClockRate)/int64(time.Second)),
			packets: t.packets,
			octets:  t.octets,
		}
		t.sent = false
	}
	var bp *reportBlock
	if have {
		bp = &block
	}
	n := appendReport(t.rbuf[:], s.ssrc, si, bp)
	n += appendSDES(t.rbuf[n:], s.ssrc, s.cfg.CNAME)
	s.writeRTCP(t, t.rbuf[:n], true)
}

// sendBye sends RR (or SR) + SDES + BYE once at Close; s.txMu is held.
func (s *Session) sendBye() {
	t := &s.tx
	if !t.started {
		return
	}
	n := appendReport(t.rbuf[:], s.ssrc, nil, nil)
	n += appendSDES(t.rbuf[n:], s.ssrc, s.cfg.CNAME)
	n += appendBYE(t.rbuf[n:], s.ssrc)
	s.writeRTCP(t, t.rbuf[:n], false)
}

// writeRTCP sends an RTCP packet; s.txMu is held. In a Tick (tick) it
// goes out with the worker's batch of RTP packets, which saves a system
// call per report: on a VM, at 1,000 calls (200 reports a second) those
// took 3.5% of the node, mostly the system call's entry and exit.
func (s *Session) writeRTCP(t *txState, b []byte, tick bool) {
	sk, dst := s.rsock, t.rtcpDst // rsock is nil where rconn's descriptor is out of reach
	if t.mux {
		sk, dst = s.sock, t.dst
	}
	if !dst.IsValid() {
		return
	}
	if tick && t.batch != nil && sk != nil && len(b) <= maxBatchPacket && t.batch.add(sk, b, dst) == nil {
		return
	}
	if t.mux {
		_ = s.sock.writeTo(b, dst)
	} else {
		_, _ = s.rconn.WriteToUDPAddrPort(b, dst)
	}
}
