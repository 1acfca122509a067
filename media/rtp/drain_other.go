//go:build unix && !linux

package rtp

import (
	"net/netip"
	"syscall"
	"time"
)

// drainBatch is how many datagrams one read takes: one, by recvfrom.
const drainBatch = 1

// batch is the memory of one drain where recvmmsg is missing: one
// datagram per read, stamped with the time of the drain.
type batch struct {
	bufs [1][1500]byte
	from netip.AddrPort
	size int
	read func(fd uintptr) bool
	n    int
}

func (b *batch) init() {
	b.read = func(fd uintptr) bool {
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
}

func (s *Session) enableTimestamps() {}

func (s *Session) readBatch(b *batch) int {
	if err := s.raw.Read(b.read); err != nil {
		return 0
	}
	return b.n
}

func (b *batch) datagram(_ int, now time.Time) ([]byte, netip.AddrPort, time.Time) {
	return b.bufs[0][:b.size], b.from, now
}
