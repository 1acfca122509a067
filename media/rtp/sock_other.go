//go:build unix && !linux

package rtp

import (
	"net"
	"net/netip"
	"syscall"
)

// sock is a session's RTP socket. Where recvmmsg is missing it is a
// net.UDPConn read without blocking through its RawConn, one datagram a
// read (see sock_linux.go for the Linux socket, kept out of the poller).
type sock struct {
	conn *net.UDPConn
	raw  syscall.RawConn
	rd   func(fd uintptr) bool
	b    *batch
}

func listenSock(ip netip.Addr, port int) (*sock, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(port))))
	if err != nil {
		return nil, err
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &sock{conn: conn, raw: raw}
	s.rd = func(fd uintptr) bool {
		b := s.b
		b.n = 0
		n, sa, err := syscall.Recvfrom(int(fd), b.bufs[0][:], syscall.MSG_DONTWAIT)
		if err != nil {
			return true
		}
		switch a := sa.(type) {
		case *syscall.SockaddrInet4:
			b.from = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
		case *syscall.SockaddrInet6:
			b.from = netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
		default:
			return true
		}
		b.n, b.size = 1, min(n, len(b.bufs[0]))
		return true
	}
	return s, nil
}

// sockOf: no pacer worker sends here, so no sock for an RTCP conn.
func sockOf(*net.UDPConn) *sock { return nil }

func (s *sock) localAddr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (s *sock) writeTo(b []byte, to netip.AddrPort) error {
	_, err := s.conn.WriteToUDPAddrPort(b, to)
	return err
}

func (s *sock) readBatch(b *batch) int {
	s.b = b
	if err := s.raw.Read(s.rd); err != nil {
		return 0
	}
	return b.n
}

func (s *sock) enableTimestamps() {}

func (s *sock) close() error { return s.conn.Close() }
