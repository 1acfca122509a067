package rtp

import (
	"log/slog"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/voiced/voiced/media/pace"
)

// batchSlots is how many packets a send batch holds before it goes out
// mid-tick; the rest of a tick's packets follow at the end of the Ticks.
const batchSlots = 128

// maxBatchPacket is the largest packet a batch slot holds: an RTP header
// and the largest payload (maxPayload) fit; anything larger is sent alone.
const maxBatchPacket = 512

// sendBatch gathers the RTP packets that one pacer worker's sessions send
// during a tick's Ticks and sends them with one io_uring_enter(2) when the
// Ticks are done (pace.Worker's AfterTicks), instead of one sendto(2)
// each. Each packet is copied into a slot of its own, so a session may
// reuse its buffer at once and send again in the same tick.
//
// What it changes on the wire: a session's packet leaves at the end of its
// worker's Ticks (or when the batch fills) rather than during its own Tick,
// the same offset in every tick, so the spacing of a call's packets is
// unchanged. A send that fails (a full socket buffer, EAGAIN) is counted in
// failed, after the session has already counted the packet as sent: to the
// peer it is a lost packet, which its sequence number gap shows.
type sendBatch struct {
	ring   *uring
	n      int
	slots  []sendSlot
	failed atomic.Uint64
	done   func(userData uint64, res int32)
}

// sendSlot is one queued packet and the msghdr that sends it.
type sendSlot struct {
	msg  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrInet6
	buf  [maxBatchPacket]byte
}

// NewPacerWorker is pace.Config.NewWorker for a pacer that drives
// sessions (Config.Pacer): each worker gets a send batch on its own
// io_uring. Where io_uring is unavailable (an old kernel, a sandbox that
// forbids it) it returns nil and the sessions send one packet per system
// call, as they do on any other pacer.
func NewPacerWorker(i int) pace.Worker {
	b, err := newSendBatch()
	if err != nil {
		slog.Debug("rtp: no io_uring; sending a system call per packet", "worker", i, "err", err)
		return nil
	}
	return b
}

func newSendBatch() (*sendBatch, error) {
	r, err := newURing(batchSlots)
	if err != nil {
		return nil, err
	}
	b := &sendBatch{ring: r, slots: make([]sendSlot, batchSlots)}
	for i := range b.slots {
		sl := &b.slots[i]
		sl.iov.Base = &sl.buf[0]
		sl.msg.Name = (*byte)(unsafe.Pointer(&sl.name))
		sl.msg.Iov = &sl.iov
		sl.msg.Iovlen = 1
	}
	b.done = func(_ uint64, res int32) {
		if res < 0 {
			b.failed.Add(1)
		}
	}
	return b, nil
}

// add queues p for to from sk's socket. It fails only as sock.writeTo
// would before sending: a destination the socket cannot reach.
func (b *sendBatch) add(sk *sock, p []byte, to netip.AddrPort) error {
	sl := &b.slots[b.n]
	salen, err := sk.sockaddr(&sl.name, to)
	if err != nil {
		return err
	}
	sl.msg.Namelen = uint32(salen)
	sl.iov.SetLen(copy(sl.buf[:], p))
	b.ring.sendmsg(sk.fd, &sl.msg, 0)
	if b.n++; b.n == len(b.slots) {
		b.flush()
	}
	return nil
}

// AfterTicks sends what the worker's Ticks queued.
func (b *sendBatch) AfterTicks(_ time.Time) { b.flush() }

func (b *sendBatch) flush() {
	if err := b.ring.submit(b.n, b.done); err != nil {
		b.failed.Add(uint64(b.n))
	}
	b.n = 0
}
