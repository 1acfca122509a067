package rtp

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// sock is a session's RTP socket, kept out of Go's network poller: a
// non-blocking file descriptor that only the pacer worker reads (one
// recvmmsg per tick) and that the send side writes under Session.txMu.
//
// Why not a net.UDPConn: a socket registered with the poller makes every
// arriving datagram an epoll event, and while the node waits for its next
// tick each event wakes the idle thread, runs the scheduler and finds no
// goroutine to run, since nobody parks on the socket (the tick drains it).
// At a thousand calls that is tens of thousands of wake-ups a second, and
// the poller's per-call locks on each read and write on top. Here packets
// wait in the socket buffer until the tick, and the system calls are the
// only cost.
//
// Lifetime: close must not race a read or write on the descriptor (a
// reused descriptor number would then reach another socket). Session.Close
// leaves the pacer first (no tick, so no drain or send, runs after that),
// sends its BYE under txMu, and only then closes.
type sock struct {
	fd    int
	v6    bool // AF_INET6 (dual-stack when bound to the wildcard)
	local netip.AddrPort
	sa    syscall.RawSockaddrInet6 // the destination of the write in progress (under txMu)
}

// listenSock binds a non-blocking UDP socket to ip:port. The wildcard
// IPv6 address binds all IPv4 and IPv6 interfaces, as net.ListenUDP("udp")
// does; it falls back to IPv4 alone on a host without IPv6.
func listenSock(ip netip.Addr, port int) (*sock, error) {
	ip = ip.Unmap()
	if ip.Is6() {
		s, err := bindSock(syscall.AF_INET6, ip, port)
		if err == nil || !ip.IsUnspecified() || err != syscall.EAFNOSUPPORT {
			return s, err
		}
		ip = netip.IPv4Unspecified()
	}
	return bindSock(syscall.AF_INET, ip, port)
}

func bindSock(family int, ip netip.Addr, port int) (*sock, error) {
	fd, err := syscall.Socket(family, syscall.SOCK_DGRAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_UDP)
	if err != nil {
		return nil, err
	}
	var sa syscall.Sockaddr
	if family == syscall.AF_INET6 {
		v6only := 0
		if !ip.IsUnspecified() {
			v6only = 1
		}
		if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, v6only); err != nil {
			syscall.Close(fd)
			return nil, err
		}
		sa = &syscall.SockaddrInet6{Port: port, Addr: ip.As16()}
	} else {
		sa = &syscall.SockaddrInet4{Port: port, Addr: ip.As4()}
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return &sock{fd: fd, v6: family == syscall.AF_INET6, local: netip.AddrPortFrom(ip, uint16(port))}, nil
}

// sockOf returns a sock for c's descriptor, so that a pacer worker's
// ring can send from it (RTCP without mux); c keeps the descriptor, and
// the sock must never be closed. nil if the descriptor is out of reach.
func sockOf(c *net.UDPConn) *sock {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var s *sock
	_ = rc.Control(func(fd uintptr) {
		sa, err := syscall.Getsockname(int(fd))
		if err != nil {
			return
		}
		_, v6 := sa.(*syscall.SockaddrInet6)
		s = &sock{fd: int(fd), v6: v6, local: c.LocalAddr().(*net.UDPAddr).AddrPort()}
	})
	return s
}

// localAddr returns the bound address.
func (s *sock) localAddr() netip.AddrPort { return s.local }

// writeTo sends one datagram to, without blocking: a full send buffer
// drops it (EAGAIN), as the network would. The caller holds Session.txMu.
func (s *sock) writeTo(b []byte, to netip.AddrPort) error {
	if len(b) == 0 {
		return nil
	}
	salen, err := s.sockaddr(&s.sa, to)
	if err != nil {
		return err
	}
	// A raw system call: the socket never blocks, so the runtime need not
	// hand the P off, which saves the scheduler's bookkeeping per packet.
	_, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(s.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_DONTWAIT, uintptr(unsafe.Pointer(&s.sa)), salen)
	if e != 0 {
		return e
	}
	return nil
}

// sockaddr writes to into sa in the socket's address family and returns
// its length.
func (s *sock) sockaddr(sa *syscall.RawSockaddrInet6, to netip.AddrPort) (uintptr, error) {
	a := to.Addr()
	var salen uintptr
	if s.v6 {
		*sa = syscall.RawSockaddrInet6{Family: syscall.AF_INET6, Addr: a.As16()}
		salen = syscall.SizeofSockaddrInet6
	} else {
		a = a.Unmap()
		if !a.Is4() {
			return 0, fmt.Errorf("send to %v from an IPv4 socket: %w", to, syscall.EAFNOSUPPORT)
		}
		sa4 := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = syscall.RawSockaddrInet4{Family: syscall.AF_INET, Addr: a.As4()}
		salen = syscall.SizeofSockaddrInet4
	}
	// The port is at the same offset in both layouts, in network order.
	p := to.Port()
	sa.Port = p>>8 | p<<8
	return salen, nil
}

// readBatch reads up to drainBatch waiting datagrams into b without
// blocking and returns how many; 0 when the socket is empty. Only the
// pacer worker ticking the session calls it.
func (s *sock) readBatch(b *batch) int {
	for i := range b.msgs {
		h := &b.msgs[i].hdr
		h.Namelen = uint32(unsafe.Sizeof(b.names[i]))
		h.SetControllen(cmsgSpace)
	}
	r, _, e := syscall.RawSyscall6(syscall.SYS_RECVMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&b.msgs[0])), drainBatch,
		syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0
	}
	return int(r)
}

// enableTimestamps asks the kernel to stamp each datagram with its arrival
// time (SO_TIMESTAMPNS), so that packets read a tick after they came keep
// their true arrival time for the jitter statistics and the buffer.
func (s *sock) enableTimestamps() {
	_ = syscall.SetsockoptInt(s.fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
}

// close releases the descriptor; see the type's lifetime rule.
func (s *sock) close() error {
	if s.fd < 0 {
		return nil
	}
	err := syscall.Close(s.fd)
	s.fd = -1
	return err
}
