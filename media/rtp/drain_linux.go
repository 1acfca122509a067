package rtp

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// mmsghdr is struct mmsghdr of recvmmsg(2): Go lays it out like C on every
// Linux architecture (msg_len after the msghdr, padded to its alignment).
type mmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
}

// drainBatch is how many datagrams one read (one recvmmsg) takes.
const drainBatch = 8

// cmsgSpace fits one SCM_TIMESTAMPNS control message (a header and a
// struct timespec).
const cmsgSpace = 64

// batch is the memory of one drain: drainBatch datagrams with their
// sources and kernel receive times, read by one recvmmsg call.
type batch struct {
	msgs  [drainBatch]mmsghdr
	iovs  [drainBatch]syscall.Iovec
	names [drainBatch]syscall.RawSockaddrAny
	ctl   [drainBatch][cmsgSpace]byte
	bufs  [drainBatch][1500]byte
	read  func(fd uintptr) bool // reads into the batch; set once by init
	n     int                   // datagrams read by the last read
	err   syscall.Errno
}

func (b *batch) init() {
	for i := range b.msgs {
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(len(b.bufs[i]))
	}
	b.read = func(fd uintptr) bool {
		for i := range b.msgs {
			h := &b.msgs[i].hdr
			h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
			h.Namelen = uint32(unsafe.Sizeof(b.names[i]))
			h.Iov = &b.iovs[i]
			h.Iovlen = 1
			h.Control = &b.ctl[i][0]
			h.SetControllen(cmsgSpace)
			h.Flags = 0
		}
		r, _, e := syscall.Syscall6(syscall.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.msgs[0])), drainBatch,
			syscall.MSG_DONTWAIT, 0, 0)
		b.n, b.err = int(r), e
		if e != 0 {
			b.n = 0
		}
		return true // never park: an empty socket is the common answer
	}
}

// enableTimestamps asks the kernel to stamp each datagram with its arrival
// time (SO_TIMESTAMPNS), so that packets read a tick after they came keep
// their true arrival time for the jitter statistics and the buffer.
func (s *Session) enableTimestamps() {
	_ = s.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
}

// readBatch reads up to drainBatch waiting datagrams without blocking and
// returns how many it read; 0 when the socket is empty (or closed).
func (s *Session) readBatch(b *batch) int {
	if err := s.raw.Read(b.read); err != nil {
		return 0
	}
	return b.n
}

// datagram returns the i-th datagram of the last read, its source and its
// arrival: the kernel's stamp placed on the monotonic clock of now (the
// time of the drain, taken after the read).
func (b *batch) datagram(i int, now time.Time) ([]byte, netip.AddrPort, time.Time) {
	m := &b.msgs[i]
	data := b.bufs[i][:min(int(m.n), len(b.bufs[i]))]
	var from netip.AddrPort
	switch sa := &b.names[i]; sa.Addr.Family {
	case syscall.AF_INET:
		p := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		from = netip.AddrPortFrom(netip.AddrFrom4(p.Addr), port(p.Port))
	case syscall.AF_INET6:
		p := (*syscall.RawSockaddrInet6)(unsafe.Pointer(sa))
		from = netip.AddrPortFrom(netip.AddrFrom16(p.Addr).Unmap(), port(p.Port))
	}
	at := now
	if ctl := b.ctl[i][:min(int(m.hdr.Controllen), cmsgSpace)]; len(ctl) >= syscall.SizeofCmsghdr+16 {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS {
			ts := (*syscall.Timespec)(unsafe.Pointer(&ctl[syscall.SizeofCmsghdr]))
			age := now.UnixNano() - ts.Nano()
			if age > 0 && age < int64(time.Second) { // else the wall clock stepped
				at = now.Add(-time.Duration(age))
			}
		}
	}
	return data, from, at
}

// port reads a sockaddr port, stored in network byte order.
func port(p uint16) uint16 {
	return binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&p))[:])
}
