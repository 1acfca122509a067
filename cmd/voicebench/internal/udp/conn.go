//go:build linux

// Package udp is an IPv4 UDP socket read and written in batches
// (recvmmsg(2) and sendmmsg(2)) with kernel receive timestamps, so one
// goroutine can carry the RTP of thousands of calls and arrival times do
// not include the time a packet waited in the socket for the reader.
//
// Nothing allocates per batch or per packet: the system-call headers,
// address and control buffers are built once per Conn and reused.
package udp

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxBatch is the most messages one ReadBatch or WriteBatch call moves
// (the kernel's UIO_MAXIOV bound for sendmmsg).
const MaxBatch = 1024

// oobSize holds one SCM_TIMESTAMPNS control message: a 16-byte header
// and a 16-byte timespec, with room to spare.
const oobSize = 64

// Message is one datagram of a batch.
type Message struct {
	// Buf is, for ReadBatch, the buffer to fill (its whole length is
	// offered to the kernel); for WriteBatch, the datagram.
	Buf []byte
	// N is the number of bytes received into Buf (ReadBatch).
	N int
	// Addr is the source (ReadBatch) or destination (WriteBatch).
	Addr netip.AddrPort
	// Time is the kernel's receive time in Unix nanoseconds (ReadBatch),
	// 0 when the kernel gave none.
	Time int64
}

type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// batch is the reusable system-call scratch of one direction.
type batch struct {
	h     []mmsghdr
	iov   []unix.Iovec
	names []unix.RawSockaddrInet4
	oob   [][oobSize]byte
	// state of the call in flight, read by the RawConn callback
	off   int // first header of the call
	vlen  int
	got   int
	errno syscall.Errno
}

func newBatch(size int, oob bool) *batch {
	b := &batch{
		h:     make([]mmsghdr, size),
		iov:   make([]unix.Iovec, size),
		names: make([]unix.RawSockaddrInet4, size),
	}
	if oob {
		b.oob = make([][oobSize]byte, size)
	}
	for i := range b.h {
		h := &b.h[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Namelen = unix.SizeofSockaddrInet4
		h.Iov = &b.iov[i]
		h.SetIovlen(1)
	}
	return b
}

// Conn is a batched UDP socket. One goroutine may read while another
// writes; concurrent reads, or concurrent writes, are not allowed.
type Conn struct {
	c     *net.UDPConn
	rc    syscall.RawConn
	local netip.AddrPort
	r, w  *batch
	// the RawConn callbacks, bound once so no closure escapes per call
	readFn, writeFn func(fd uintptr) bool
}

// Listen opens a UDP socket on addr (port 0 picks one) with kernel receive
// timestamps on and, when bufBytes > 0, receive and send buffers of that
// size (forced past net.core.rmem_max when running as root).
func Listen(addr netip.AddrPort, bufBytes int) (*Conn, error) {
	if !addr.Addr().Is4() {
		return nil, fmt.Errorf("listen %s: %w", addr, ErrNotIPv4)
	}
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		if serr != nil || bufBytes <= 0 {
			return
		}
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, bufBytes) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, bufBytes)
		}
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, bufBytes) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, bufBytes)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("listen %s: socket options: %w", addr, err)
	}
	u := &Conn{c: c, rc: rc, local: c.LocalAddr().(*net.UDPAddr).AddrPort(),
		r: newBatch(MaxBatch, true), w: newBatch(MaxBatch, false)}
	u.readFn = u.recv
	u.writeFn = u.send
	return u, nil
}

// LocalAddr returns the socket's address.
func (u *Conn) LocalAddr() netip.AddrPort { return u.local }

// Close closes the socket; a blocked ReadBatch returns net.ErrClosed.
func (u *Conn) Close() error { return u.c.Close() }

// ReadBatch blocks until at least one datagram is there and fills up to
// min(len(ms), MaxBatch) messages, returning how many. Each Buf must be
// non-empty; a longer datagram is truncated to len(Buf).
func (u *Conn) ReadBatch(ms []Message) (int, error) {
	b := u.r
	n := min(len(ms), MaxBatch)
	if n == 0 {
		return 0, nil
	}
	for i := range n {
		b.iov[i].Base = &ms[i].Buf[0]
		b.iov[i].SetLen(len(ms[i].Buf))
		h := &b.h[i].hdr
		h.Namelen = unix.SizeofSockaddrInet4
		h.Control = &b.oob[i][0]
		h.SetControllen(oobSize)
		h.Flags = 0
		b.h[i].n = 0
	}
	b.off, b.vlen, b.got, b.errno = 0, n, 0, 0
	if err := u.rc.Read(u.readFn); err != nil {
		return 0, err
	}
	if b.errno != 0 {
		return 0, fmt.Errorf("recvmmsg: %w", b.errno)
	}
	for i := range b.got {
		m := &ms[i]
		m.N = int(b.h[i].n)
		sa := &b.names[i]
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		m.Addr = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
		m.Time = timestamp(b.oob[i][:b.h[i].hdr.Controllen])
	}
	return b.got, nil
}

func (u *Conn) recv(fd uintptr) bool {
	b := u.r
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.h[0])), uintptr(b.vlen), 0, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	b.got, b.errno = int(r), e
	return true
}

// WriteBatch sends every message (in chunks of MaxBatch), waiting while
// the socket's send buffer is full. It returns how many were sent; fewer
// than len(ms) only with an error. Messages the kernel refuses one by one
// (ECONNREFUSED after an ICMP port unreachable) are skipped and counted
// as sent, as a datagram socket would.
func (u *Conn) WriteBatch(ms []Message) (int, error) {
	sent := 0
	for sent < len(ms) {
		n, err := u.writeChunk(ms[sent:min(len(ms), sent+MaxBatch)])
		sent += n
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

func (u *Conn) writeChunk(ms []Message) (int, error) {
	b := u.w
	for i := range ms {
		m := &ms[i]
		if !m.Addr.Addr().Is4() {
			return i, fmt.Errorf("sendmmsg to %s: %w", m.Addr, ErrNotIPv4)
		}
		sa := &b.names[i]
		sa.Family = unix.AF_INET
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		port := m.Addr.Port()
		p[0], p[1] = byte(port>>8), byte(port)
		sa.Addr = m.Addr.Addr().As4()
		b.iov[i].Base = unsafe.SliceData(m.Buf)
		b.iov[i].SetLen(len(m.Buf))
		h := &b.h[i].hdr
		h.Namelen = unix.SizeofSockaddrInet4
		h.Control = nil
		h.SetControllen(0)
		h.Flags = 0
	}
	b.off = 0
	for b.off < len(ms) {
		b.vlen, b.got, b.errno = len(ms)-b.off, 0, 0
		if err := u.rc.Write(u.writeFn); err != nil {
			return b.off, err
		}
		switch {
		case b.errno == unix.ECONNREFUSED:
			b.off++ // a pending ICMP error surfaced on this message; skip it
		case b.errno != 0:
			return b.off, fmt.Errorf("sendmmsg: %w", b.errno)
		default:
			b.off += b.got
		}
	}
	return len(ms), nil
}

func (u *Conn) send(fd uintptr) bool {
	b := u.w
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.h[b.off])), uintptr(b.vlen), 0, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	b.got, b.errno = int(r), e
	return true
}

// timestamp finds SCM_TIMESTAMPNS in a control buffer (cmsghdr: 8-byte
// length, 4-byte level, 4-byte type, then a timespec of two int64).
func timestamp(oob []byte) int64 {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.SizeofCmsghdr+16 {
			ts := (*unix.Timespec)(unsafe.Pointer(&oob[unix.SizeofCmsghdr]))
			return ts.Sec*1e9 + ts.Nsec
		}
		step := (l + 7) &^ 7
		if step > len(oob) {
			return 0
		}
		oob = oob[step:]
	}
	return 0
}
