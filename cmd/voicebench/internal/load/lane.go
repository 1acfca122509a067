package load

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/pion/rtp"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
	"github.com/voiced/voiced/cmd/voicebench/internal/udp"
)

// readBatch is how many datagrams one ReadBatch takes at most.
const readBatch = 256

// bufSize fits any RTP packet voicebench handles (G.711 20 ms is 172
// bytes, Opus well under 400).
const bufSize = 1500

// portEntry routes packets from one source port: to one call, or by our
// SSRC when several calls share the port (an echo from one socket).
type portEntry struct {
	only   *call
	bySSRC map[uint32]*call
}

// lane is one shared socket and its reader.
type lane struct {
	conn *udp.Conn

	mu    sync.Mutex // taken per batch; guards routes and every routed call's rx
	ports map[uint16]*portEntry
	win   rtpstat.Histogram // |D| of the current window
	all   rtpstat.Histogram // |D| of the whole run

	received atomic.Uint64
	rtcp     atomic.Uint64
	unknown  atomic.Uint64 // packets no call claims
	bad      atomic.Uint64 // datagrams that are not RTP

	done chan struct{}
}

func openLane(local netip.Addr, buf int) (*lane, error) {
	c, err := udp.Listen(netip.AddrPortFrom(local, 0), buf)
	if err != nil {
		return nil, err
	}
	l := &lane{conn: c, ports: map[uint16]*portEntry{}, done: make(chan struct{})}
	// The buffers are made here, not in the goroutine, so a lane allocates
	// nothing once openLane has returned.
	msgs := make([]udp.Message, readBatch)
	for i := range msgs {
		msgs[i].Buf = make([]byte, bufSize)
	}
	go l.read(msgs)
	return l, nil
}

// close stops the reader and waits for it.
func (l *lane) close() {
	l.conn.Close()
	<-l.done
}

// route makes packets from port (or, on a shared port, with our SSRC)
// reach c.
func (l *lane) route(port uint16, c *call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.ports[port]
	switch {
	case e == nil:
		l.ports[port] = &portEntry{only: c}
	case e.only != nil:
		e.bySSRC = map[uint32]*call{e.only.ssrc: e.only, c.ssrc: c}
		e.only = nil
	default:
		e.bySSRC[c.ssrc] = c
	}
}

// unroute removes c's route.
func (l *lane) unroute(port uint16, c *call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.ports[port]
	switch {
	case e == nil:
	case e.only == c:
		delete(l.ports, port)
	case e.bySSRC != nil:
		delete(e.bySSRC, c.ssrc)
		if len(e.bySSRC) == 0 {
			delete(l.ports, port)
		}
	}
}

func (l *lane) read(msgs []udp.Message) {
	defer close(l.done)
	var h rtp.Header
	for {
		n, err := l.conn.ReadBatch(msgs)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.mu.Lock()
		got := 0
		for i := range n {
			m := &msgs[i]
			b := m.Buf[:m.N]
			if len(b) < 12 || b[0]>>6 != 2 {
				l.bad.Add(1)
				continue
			}
			if pt := b[1] & 0x7f; pt >= 72 && pt <= 76 { // RTCP SR/RR/SDES/BYE/APP (RFC 5761 section 4)
				l.rtcp.Add(1)
				continue
			}
			hl, err := h.Unmarshal(b)
			if err != nil {
				l.bad.Add(1)
				continue
			}
			c := l.lookup(m.Addr.Port(), h.SSRC)
			if c == nil {
				l.unknown.Add(1)
				continue
			}
			end := len(b) - int(h.PaddingSize)
			if end < hl {
				end = hl
			}
			if d := c.receive(h.PayloadType, h.SequenceNumber, h.Timestamp, h.SSRC, b[hl:end], m.Time); d >= 0 {
				l.win.Add(d)
				l.all.Add(d)
			}
			got++
		}
		l.mu.Unlock()
		l.received.Add(uint64(got))
	}
}

func (l *lane) lookup(port uint16, ssrc uint32) *call {
	e := l.ports[port]
	if e == nil {
		return nil
	}
	if e.only != nil {
		return e.only
	}
	return e.bySSRC[ssrc]
}
