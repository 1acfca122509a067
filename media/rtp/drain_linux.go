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
// sources and kernel receive times, read by one recvmmsg call
// (sock.readBatch).
type batch struct {
	msgs  [drainBatch]mmsghdr
	iovs  [drainBatch]syscall.Iovec
	names [drainBatch]syscall.RawSockaddrAny
	ctl   [drainBatch][cmsgSpace]byte
	bufs  [drainBatch][1500]byte
}

// init points each message header at its buffers, once: a batch is
// pooled, not moved, and the kernel writes back only the lengths, which
// sock.readBatch resets before each read.
func (b *batch) init() {
	for i := range b.msgs {
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(len(b.bufs[i]))
		h := &b.msgs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Iov = &b.iovs[i]
		h.Iovlen = 1
		h.Control = &b.ctl[i][0]
	}
}

// datagram returns the i-th datagram of the last read, its source and its
// arrival.
func (b *batch) datagram(i int, now time.Time) ([]byte, netip.AddrPort, time.Time) {
	m := &b.msgs[i]
	return parseDatagram(b.bufs[i][:min(int(m.n), len(b.bufs[i]))], &b.names[i], b.ctl[i][:min(int(m.hdr.Controllen), cmsgSpace)], now)
}

// parseDatagram returns a datagram as read with its source sa and control
// messages ctl: its data, its source and its arrival, the kernel's stamp
// placed on the monotonic clock of now (the time of the drain, taken
// after the read).
func parseDatagram(data []byte, sa *syscall.RawSockaddrAny, ctl []byte, now time.Time) ([]byte, netip.AddrPort, time.Time) {
	var from netip.AddrPort
	switch sa.Addr.Family {
	case syscall.AF_INET:
		p := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		from = netip.AddrPortFrom(netip.AddrFrom4(p.Addr), port(p.Port))
	case syscall.AF_INET6:
		p := (*syscall.RawSockaddrInet6)(unsafe.Pointer(sa))
		from = netip.AddrPortFrom(netip.AddrFrom16(p.Addr).Unmap(), port(p.Port))
	}
	at := now
	if len(ctl) >= syscall.SizeofCmsghdr+16 {
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
