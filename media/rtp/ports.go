package rtp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
)

// Ports hands out RTP ports from a node's configured range: even ports for
// RTP with the odd port above for RTCP (RFC 3550 section 11), taken in
// rotation so a port just released is the last to be reused (a late
// packet of the previous call then finds nobody). It is safe for
// concurrent use; the kernel, not Ports, knows which ports are free, so
// ports used by other programs are simply skipped.
type Ports struct {
	mu       sync.Mutex
	min, max int // inclusive; min even
	next     int
}

// NewPorts returns an allocator for [min, max]. min is rounded up to an
// even port; the range must hold at least one even/odd pair.
func NewPorts(min, max int) (*Ports, error) {
	if min%2 == 1 {
		min++
	}
	if min < 1024 || max > 65535 || max < min+1 {
		return nil, fmt.Errorf("rtp port range %d-%d: %w", min, max, ErrBadConfig)
	}
	return &Ports{min: min, max: max, next: min}, nil
}

// Range returns the range's first and last ports.
func (p *Ports) Range() (min, max int) { return p.min, p.max }

// listen binds the next free even port on ip and, unless mux, the odd port
// above it.
func (p *Ports) listen(ip netip.Addr, mux bool) (rtp *sock, rtcp *net.UDPConn, err error) {
	pairs := (p.max - p.min + 1) / 2
	for range pairs {
		p.mu.Lock()
		port := p.next
		p.next += 2
		if p.next+1 > p.max {
			p.next = p.min
		}
		p.mu.Unlock()

		rtp, err = listenSock(ip, port)
		if err != nil {
			if inUse(err) {
				continue
			}
			return nil, nil, fmt.Errorf("listen udp %v port %d: %w", ip, port, err)
		}
		if mux {
			return rtp, nil, nil
		}
		rtcp, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(port+1))))
		if err != nil {
			rtp.close()
			if inUse(err) {
				continue
			}
			return nil, nil, fmt.Errorf("listen udp %v port %d: %w", ip, port+1, err)
		}
		return rtp, rtcp, nil
	}
	return nil, nil, fmt.Errorf("%d-%d on %v: %w", p.min, p.max, ip, ErrNoPorts)
}

func inUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EACCES)
}
