package rtp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/voiced/voiced/media/pace"
)

// batchSlots is how many send slots are allocated at a time.
const batchSlots = 256

// maxHeld is how many packets a worker holds for the end of its Ticks; a
// worker with more sessions than that sends a batch mid-tick. A tick's
// packets all leave together (and with pace.Config.AlignSends at the
// tick's time) up to here.
const maxHeld = 16 * batchSlots

// maxBatchPacket is the largest packet a batch slot holds: an RTP header
// and the largest payload (maxPayload) fit; anything larger is sent alone.
const maxBatchPacket = 512

// A session builds its RTP packets (a 12-byte header, no extensions) in a
// send slot: the largest must fit. This fails to compile if it does not.
var _ [maxBatchPacket - 12 - maxPayload]struct{}

// sendCQSlots is the size of the worker's completion queue: a tick's sends
// are pushed (up to maxHeld) before their completions are reaped.
const sendCQSlots = 2 * maxHeld

// workerIO is one pacer worker's io_uring (pace.Worker): the RTP packets
// (and RTCP reports) that the worker's sessions send during their Ticks
// are copied into slots and go to the kernel when the Ticks are done
// (AfterTicks), or mid-tick past maxHeld, in a few io_uring_enter(2)
// calls per tick instead of a system call per packet. Each session reads
// its own socket (one recvmmsg in its PostTick).
//
// What it changes on the wire: a session's packet leaves with the rest of
// its worker's tick rather than during its own Tick. On a pacer with
// pace.Config.AlignSends (the node's) that is at the tick's time: the
// worker queues the tick's sends half a period early and its send thread
// (sender), outside the Go scheduler, submits them at the time, whatever
// the Go scheduler does to the worker meanwhile, so a call's packets are
// spaced by the period. Without it they leave when the Ticks end, which
// moves with what they cost (a measured cause of jitter: at 40 Opus calls
// p99 |D| grew to 2.3 ms with the core 29% busy) and with how long the
// worker waited for a P. A send that fails
// (a full socket buffer, EAGAIN) is counted in failed, after the session
// has already counted the packet as sent: to the peer it is a lost packet,
// which its sequence number gap shows.
//
// Everything runs on the worker's goroutine: the sessions' Ticks queue,
// AfterTicks sends, and the pacer closes the worker after its last tick.
type workerIO struct {
	ring    *uring
	n       int                     // queued sends
	slots   []*[batchSlots]sendSlot // grown a chunk at a time, up to maxHeld
	sending int                     // sends submitted (or handed to sender) and not yet reaped
	sender  *sender                 // the send thread, made at the first held tick
	solo    bool                    // no send thread could be made: sends go at once
	sends   atomic.Uint64           // sends submitted, over the worker's life
	failed  atomic.Uint64
	done    func(c *uringCQE) // complete, as a func value made once
	warned  bool              // a failed enter was logged
}

// sendSlot is one queued packet and the msghdr that sends it.
type sendSlot struct {
	fd   int
	msg  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrInet6
	buf  [maxBatchPacket]byte
}

// NewPacerWorker is pace.Config.NewWorker for a pacer that drives
// sessions (Config.Pacer): each worker gets a workerIO on its own
// io_uring, which sends its sessions' packets of a tick together. Where
// io_uring is unavailable (an old kernel, a sandbox that forbids it) it
// returns nil and the sessions make a system call per packet, as they do
// on any other pacer.
func NewPacerWorker(i int) pace.Worker {
	w, err := newWorkerIO()
	if err != nil {
		slog.Debug("rtp: no io_uring; a system call per packet", "worker", i, "err", err)
		return nil
	}
	return w
}

// newWorkerIO is a workerIO whose ring has sent a datagram to itself.
func newWorkerIO() (*workerIO, error) {
	// A tick's sends (up to maxHeld) all fit in the submission queue, so
	// a held tick's wait in it for the send thread.
	r, err := newURing(maxHeld, sendCQSlots)
	if err != nil {
		return nil, err
	}
	w := &workerIO{ring: r}
	w.done = w.complete
	if err := w.probeSend(); err != nil {
		w.Close()
		return nil, fmt.Errorf("io_uring probe: %w", err)
	}
	return w, nil
}

// probeSend sends a datagram to itself through the ring and reads it back
// with a plain read: a sandbox whose io_uring sets up but refuses socket
// I/O is found out before any call's audio goes that way.
func (w *workerIO) probeSend() error {
	sk, to, err := probeSock()
	if err != nil {
		return err
	}
	defer sk.close()
	if err := w.probeSendTo(sk, to); err != nil {
		return err
	}
	b := new(batch)
	b.init()
	if n := sk.readBatch(b); n != 1 || string(b.bufs[0][:b.msgs[0].n]) != probeMsg {
		return fmt.Errorf("read back %d datagrams, not the one sent", n)
	}
	return nil
}

// probeMsg is what a probe sends itself.
const probeMsg = "voiced io_uring probe"

// probeSendTo sends probeMsg from sk to `to` through the ring.
func (w *workerIO) probeSendTo(sk *sock, to netip.AddrPort) error {
	if err := w.add(sk, []byte(probeMsg), to); err != nil {
		return err
	}
	w.AfterTicks(time.Time{}, time.Time{})
	if w.failed.Load() != 0 {
		return errors.New("sendmsg through the ring failed")
	}
	return nil
}

// probeSock is a socket on the loopback for a probe, and its address.
func probeSock() (*sock, netip.AddrPort, error) {
	sk, err := listenSock(netip.IPv4Unspecified(), 0)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	sa, err := syscall.Getsockname(sk.fd)
	if err != nil {
		sk.close()
		return nil, netip.AddrPort{}, err
	}
	sa4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		sk.close()
		return nil, netip.AddrPort{}, fmt.Errorf("bound to %T", sa)
	}
	return sk, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa4.Port)), nil
}

// add queues p for to from sk's socket. It fails only as sock.writeTo
// would before sending: a destination the socket cannot reach.
func (w *workerIO) add(sk *sock, p []byte, to netip.AddrPort) error {
	return w.commit(sk, copy(w.next(), p), to)
}

// settle waits for the sends handed to the send thread before (held until
// the last tick's time, which has passed when the next tick's Ticks run)
// and reaps them, so that their slots, and the ring, are the worker's
// again.
func (w *workerIO) settle() {
	if w.sender != nil {
		if err := w.sender.wait(); err != nil {
			w.enterFailed(err)
			w.giveUp()
		}
	}
	w.ring.reap(w.done)
	for w.sending > 0 {
		if err := w.enterAndReap(1); err != nil {
			w.giveUp()
		}
	}
}

// next returns the buffer of the packet to queue next (maxBatchPacket
// bytes): a session builds its packet there, where it is sent from, and
// queues it with commit. Until then the buffer is the next add's too.
func (w *workerIO) next() []byte {
	if w.sending > 0 {
		w.settle()
	}
	return w.slot(w.n).buf[:]
}

// commit queues the first n bytes of next's buffer for to from sk's
// socket. It fails as add does.
func (w *workerIO) commit(sk *sock, n int, to netip.AddrPort) error {
	sl := w.slot(w.n)
	salen, err := sk.sockaddr(&sl.name, to)
	if err != nil {
		return err
	}
	sl.fd = sk.fd
	sl.msg.Namelen = uint32(salen)
	sl.iov.SetLen(n)
	if w.n++; w.n == maxHeld {
		w.flush(time.Time{})
	}
	return nil
}

// slot returns send slot i, allocating its chunk the first time a tick
// needs it (the steady state allocates nothing).
func (w *workerIO) slot(i int) *sendSlot {
	c := i / batchSlots
	if c == len(w.slots) {
		ch := new([batchSlots]sendSlot)
		for j := range ch {
			sl := &ch[j]
			sl.iov.Base = &sl.buf[0]
			sl.msg.Name = (*byte)(unsafe.Pointer(&sl.name))
			sl.msg.Iov = &sl.iov
			sl.msg.Iovlen = 1
		}
		w.slots = append(w.slots, ch)
	}
	return &w.slots[c][i%batchSlots]
}

// AfterTicks sends what the worker's Ticks queued, at send (the zero
// Time: now).
func (w *workerIO) AfterTicks(_, send time.Time) {
	if w.ring == nil {
		return // closed
	}
	w.flush(send)
}

// enterAndReap enters the kernel (see uring.enter) and hands on what
// completed.
func (w *workerIO) enterAndReap(wait int) error {
	err := w.ring.enter(wait)
	if err != nil {
		w.enterFailed(err)
	}
	w.ring.reap(w.done)
	return err
}

// enterFailed logs the first failed io_uring_enter.
func (w *workerIO) enterFailed(err error) {
	if !w.warned {
		w.warned = true
		slog.Warn("rtp: io_uring_enter failed", "err", err)
	}
}

// complete handles one send's completion.
func (w *workerIO) complete(c *uringCQE) {
	if w.sending == 0 {
		return // flush gave up on it (and counted it as failed)
	}
	w.sending--
	if c.res < 0 {
		w.failed.Add(1)
		sendErrors.Add(1)
	}
}

// Sent implements pace.Holder: it returns when the send thread has sent
// what the last AfterTicks handed it. The pacer calls it under the
// worker's share lock, which the worker holds whenever it touches
// w.sender; it reads only the thread's counters, so the ring stays the
// worker's (the worker reaps the completions at its next tick).
func (w *workerIO) Sent() {
	if w.sender != nil {
		_ = w.sender.wait() // an error is the worker's to count, at settle
	}
}

var _ pace.Holder = (*workerIO)(nil)

// Close releases the ring; the pacer calls it after its last tick, on the
// worker's goroutine (no session sends through the worker after that).
func (w *workerIO) Close() error {
	if w.sender != nil {
		w.sender.close()
		w.sender = nil
	}
	if w.ring != nil {
		w.ring.close()
		w.ring = nil
	}
	return nil
}

// flush sends the queued packets at send. A future send (AlignSends)
// queues them all and hands the queue to the send thread, which submits
// it at that time, and returns (settle reaps them before their slots are
// written again); else it submits them now and waits for their
// completions (UDP sends complete during the submission).
func (w *workerIO) flush(send time.Time) {
	if w.n == 0 {
		return
	}
	var due int64
	if d := time.Until(send); !send.IsZero() && d > 0 && w.startSender() {
		var now unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
		due = now.Nano() + int64(d)
	}
	for c := 0; c*batchSlots < w.n; c++ {
		for j := range w.slots[c][:min(batchSlots, w.n-c*batchSlots)] {
			sl := &w.slots[c][j]
			w.ring.sendmsg(sl.fd, &sl.msg, 0)
		}
	}
	w.sending += w.n
	w.sends.Add(uint64(w.n))
	w.n = 0
	if due != 0 {
		w.sender.hand(w.ring.tail, due)
		return
	}
	for wait := w.sending; w.sending > 0; wait = 1 {
		if err := w.enterAndReap(wait); err != nil {
			w.giveUp()
		}
	}
}

// startSender makes the send thread the first time a tick is held, on the
// worker's thread so that it takes that thread's class, and reports
// whether there is one.
func (w *workerIO) startSender() bool {
	if w.sender == nil && !w.solo {
		s, err := newSender(w.ring)
		if err != nil {
			w.solo = true
			slog.Warn("rtp: no send thread; packets leave when the worker sends them", "err", err)
			return false
		}
		w.sender = s
	}
	return w.sender != nil
}

// giveUp counts what never completed as failed, after an enter failed; a
// completion that comes after all (the kernel took the request) is not
// counted twice.
func (w *workerIO) giveUp() {
	w.failed.Add(uint64(w.sending))
	sendErrors.Add(uint64(w.sending))
	w.sending = 0
}
