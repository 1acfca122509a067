package rtp

import (
	"net/netip"
	"sync"
	"time"

	prtp "github.com/pion/rtp"
)

// drainMax bounds the datagrams one session handles per tick, so a flood
// costs a tick at most that much work and the rest waits in the socket
// buffer (where the kernel drops what does not fit). A normal call brings
// one packet per tick; 32 absorb a 600 ms burst in a tick or two.
const drainMax = 32

// drainer is the scratch of one drain: the read batch and the parsed
// packet. It is pooled, not per session: sessions on one pacer worker take
// turns with the same memory, which stays in cache.
type drainer struct {
	batch
	pkt    prtp.Packet
	digits digitBatch
}

var drainers = sync.Pool{New: func() any {
	d := new(drainer)
	d.init()
	return d
}}

// drain reads and handles every datagram waiting on the RTP socket (RTP,
// and RTCP when multiplexed) without blocking, in arrival order, each with
// its kernel arrival time; now is the current time. It runs on the pacer
// worker once per tick (PostTick), so a call costs one or two system
// calls per 20 ms and no goroutine wake-up.
func (s *Session) drain(now time.Time) {
	d := drainers.Get().(*drainer)
	defer func() {
		d.digits.fn = nil
		drainers.Put(d)
	}()
	for read := 0; read < drainMax; {
		n := s.sock.readBatch(&d.batch)
		for i := range n {
			data, from, at := d.datagram(i, now)
			s.handleDatagram(data, from, at, d)
		}
		if n < drainBatch {
			return // the socket is empty
		}
		read += n
	}
}

// handleDatagram handles one datagram of a drain, then hands on the
// digits it completed.
func (s *Session) handleDatagram(data []byte, from netip.AddrPort, at time.Time, d *drainer) {
	s.handle(data, from, at, false, &d.pkt, &d.digits)
	if d.digits.n > 0 {
		s.deliver(&d.digits)
	}
}
