package siptest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/sip"
)

// EchoPort is a sip.MediaPort whose sessions bind a UDP port on
// loopback and send every packet they receive back to where it came
// from while the stream lets us send: the smallest media peer that
// proves RTP reaches the address our SDP names.
type EchoPort struct {
	// IP is the address sessions bind; zero means 127.0.0.1.
	IP netip.Addr
	// OpenErr, when set, makes Open fail.
	OpenErr error

	mu       sync.Mutex
	sessions []*EchoSession
}

// Open implements sip.MediaPort.
func (p *EchoPort) Open(ctx context.Context, c *sip.Call) (sip.Media, error) {
	if p.OpenErr != nil {
		return nil, p.OpenErr
	}
	ip := p.IP
	if !ip.IsValid() {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		return nil, err
	}
	s := &EchoSession{Call: c, conn: conn, done: make(chan struct{})}
	go s.loop()
	p.mu.Lock()
	p.sessions = append(p.sessions, s)
	p.mu.Unlock()
	return s, nil
}

// Sessions returns the sessions opened so far, oldest first.
func (p *EchoPort) Sessions() []*EchoSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*EchoSession(nil), p.sessions...)
}

// Session returns the session of the call with id, or nil.
func (p *EchoPort) Session(id int64) *EchoSession {
	for _, s := range p.Sessions() {
		if s.Call.ID() == id {
			return s
		}
	}
	return nil
}

// EchoSession is one call's echo media session.
type EchoSession struct {
	// Call is the call the session serves.
	Call *sip.Call

	conn *net.UDPConn
	done chan struct{}

	mu      sync.Mutex
	updates []sip.Stream
	digits  []rune
	closed  bool

	received, echoed atomic.Int64
	// lostToClose counts packets read as Close closed the socket, whose
	// echo then failed (at most the one in flight).
	lostToClose atomic.Int64
}

// LocalAddr implements sip.Media.
func (s *EchoSession) LocalAddr() netip.AddrPort {
	return s.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Update implements sip.Media and records the stream.
func (s *EchoSession) Update(st sip.Stream) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, st)
	return nil
}

// Close implements sip.Media.
func (s *EchoSession) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.conn.Close()
	<-s.done
	return err
}

// DTMF implements sip.DTMFReceiver.
func (s *EchoSession) DTMF(d rune, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.digits = append(s.digits, d)
}

// Updates returns the streams given to Update, in order.
func (s *EchoSession) Updates() []sip.Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sip.Stream(nil), s.updates...)
}

// Digits returns the DTMF digits received through SIP INFO.
func (s *EchoSession) Digits() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.digits)
}

// Closed reports whether Close was called.
func (s *EchoSession) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Received and Echoed count packets received and sent back.
func (s *EchoSession) Received() int64 { return s.received.Load() }

// Echoed counts packets sent back.
func (s *EchoSession) Echoed() int64 { return s.echoed.Load() }

// LostToClose counts packets received but not echoed because Close closed
// the socket meanwhile: Received is Echoed plus these for a session whose
// streams all send.
func (s *EchoSession) LostToClose() int64 { return s.lostToClose.Load() }

func (s *EchoSession) sends() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates) > 0 && s.updates[len(s.updates)-1].Sends()
}

func (s *EchoSession) loop() {
	defer close(s.done)
	buf := make([]byte, 2048)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		s.received.Add(1)
		if s.sends() {
			_, err := s.conn.WriteToUDPAddrPort(buf[:n], from)
			switch {
			case err == nil:
				s.echoed.Add(1)
			case errors.Is(err, net.ErrClosed):
				s.lostToClose.Add(1)
			}
		}
	}
}
