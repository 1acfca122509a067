package sip

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo/sip"
)

// errFlood closes a TCP connection whose source went over its rate.
var errFlood = errors.New("sip: source over its message rate")

// limiter is the per-source-IP protection of the listeners: a token
// bucket per IP for messages and accepted connections, and a bound on
// concurrent connections per IP. Buckets that have refilled are swept
// so scanners spraying addresses cannot grow the map without bound.
type limiter struct {
	rate, burst float64
	maxConns    int
	maxMsg      int
	trusted     []netip.Prefix
	now         func() time.Time

	mu        sync.Mutex
	buckets   map[netip.Addr]*bucket
	conns     map[netip.Addr]int
	lastSweep time.Time

	// dropped counts messages and connections refused.
	dropped atomic.Uint64
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets triggers an early sweep; beyond it the map is still
// correct, just swept on every insert until it shrinks.
const maxBuckets = 65536

func newLimiter(rate float64, burst, maxConns, maxMsg int, trusted []netip.Prefix, now func() time.Time) *limiter {
	return &limiter{rate: rate, burst: float64(burst), maxConns: maxConns, maxMsg: maxMsg, trusted: trusted, now: now,
		buckets: map[netip.Addr]*bucket{}, conns: map[netip.Addr]int{}}
}

// isTrusted reports whether ip is exempt from the limits.
func (l *limiter) isTrusted(ip netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// allow takes one token from ip's bucket.
func (l *limiter) allow(ip netip.Addr) bool {
	if l.isTrusted(ip) {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[ip]
	if b == nil {
		if len(l.buckets) >= maxBuckets || now.Sub(l.lastSweep) > 10*time.Second {
			l.sweep(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[ip] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		l.dropped.Add(1)
		return false
	}
	b.tokens--
	return true
}

// sweep drops buckets that are full again. Called with mu held.
func (l *limiter) sweep(now time.Time) {
	l.lastSweep = now
	for ip, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, ip)
		}
	}
}

func addrIP(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap()
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	}
	if a == nil {
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// filter is the transport read filter: it runs on every datagram (UDP)
// or read (TCP, TLS) before parsing. Over the rate, a datagram is
// dropped and a stream closed; a datagram over the size limit (or one
// that filled sipgo's read buffer, so was cut) is dropped. Streams are
// size-checked per message by the parser's MaxMessageLength.
func (l *limiter) filter(p sip.TransportReadProps, data []byte) ([]byte, error) {
	udp := p.Transport == "UDP"
	if !l.allow(addrIP(p.RemoteAddr)) {
		if udp {
			return nil, nil
		}
		return nil, errFlood
	}
	if udp && (len(data) > l.maxMsg || len(data) >= int(sip.TransportBufferReadSize)) {
		l.dropped.Add(1)
		return nil, nil
	}
	return data, nil
}

// listener wraps a TCP listener: connections over their source's rate
// or concurrent-connection bound are closed at once.
type listener struct {
	net.Listener
	l *limiter
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := addrIP(c.RemoteAddr())
		if !ln.l.allow(ip) || !ln.l.openConn(ip) {
			c.Close()
			continue
		}
		return &conn{Conn: c, l: ln.l, ip: ip}, nil
	}
}

func (l *limiter) openConn(ip netip.Addr) bool {
	if l.isTrusted(ip) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[ip] >= l.maxConns {
		l.dropped.Add(1)
		return false
	}
	l.conns[ip]++
	return true
}

func (l *limiter) closeConn(ip netip.Addr) {
	if l.isTrusted(ip) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[ip]--; l.conns[ip] <= 0 {
		delete(l.conns, ip)
	}
}

type conn struct {
	net.Conn
	l      *limiter
	ip     netip.Addr
	closed sync.Once
}

func (c *conn) Close() error {
	c.closed.Do(func() { c.l.closeConn(c.ip) })
	return c.Conn.Close()
}
