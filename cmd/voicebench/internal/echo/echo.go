// Package echo is the floor of the comparison: the least a media node
// can do with a packet (receive it and send it back), written the way a
// straightforward Go server does it, one socket and one goroutine per
// call. Server runs it; Target points the load generator at it.
package echo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/voiced/voiced/cmd/voicebench/internal/load"
)

// Server echoes every datagram on its sockets back to its sender.
type Server struct {
	conns []*net.UDPConn
	wg    sync.WaitGroup
}

// Listen opens count sockets on addr, on consecutive ports from first
// (first 0: each on an ephemeral port), and starts echoing.
func Listen(addr netip.Addr, first, count int) (*Server, error) {
	if count <= 0 {
		return nil, ErrNoPorts
	}
	s := &Server{}
	for i := range count {
		port := 0
		if first > 0 {
			port = first + i
		}
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(port))))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("echo listen: %w", err)
		}
		s.conns = append(s.conns, c)
	}
	for _, c := range s.conns {
		s.wg.Add(1)
		go s.serve(c)
	}
	return s, nil
}

func (s *Server) serve(c *net.UDPConn) {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		_, _ = c.WriteToUDPAddrPort(buf[:n], from)
	}
}

// Addrs returns the sockets' addresses, in port order.
func (s *Server) Addrs() []netip.AddrPort {
	out := make([]netip.AddrPort, len(s.conns))
	for i, c := range s.conns {
		out[i] = c.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	return out
}

// Close stops echoing and waits for the goroutines.
func (s *Server) Close() error {
	for _, c := range s.conns {
		c.Close()
	}
	s.wg.Wait()
	return nil
}

// Target sends call i to Addrs[i mod len(Addrs)]; there is no signalling.
type Target struct {
	Addrs []netip.AddrPort
}

// Dial implements load.Target.
func (t Target) Dial(_ context.Context, o load.Offer) (load.Session, load.Answer, error) {
	if len(t.Addrs) == 0 {
		return nil, load.Answer{}, ErrNoPorts
	}
	a := t.Addrs[o.Index%len(t.Addrs)]
	return session{}, load.Answer{SendTo: a, Codec: o.Codec}, nil
}

type session struct{}

// Hangup implements load.Session; there is nothing to end.
func (session) Hangup(context.Context) error { return nil }

// Ended implements load.Session; the echo never hangs up.
func (session) Ended() <-chan struct{} { return nil }
