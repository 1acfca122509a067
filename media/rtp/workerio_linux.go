package rtp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/voiced/voiced/media/pace"
)

// batchSlots is the size of the worker's io_uring: sends go to the kernel
// in submissions of up to this many, and send slots are allocated this
// many at a time.
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

// Provided buffers of a worker's multishot reads: recvBufs of recvBufSize
// bytes. Each holds one datagram in the layout of io_uring_recvmsg_out:
// its 16-byte header, then recvNameLen bytes of source address, then
// cmsgSpace bytes of control messages (the kernel's arrival time), then
// the payload, up to 1556 bytes. A buffer goes back to the kernel when its
// session has handled the datagram, in the same tick; 4,096 (6.8 MB)
// cover the datagrams of a tick of 4,000 calls on one worker. When they
// run out, a read that finds none ends (ENOBUFS), its datagrams wait in
// the socket and the worker starts the read again the next tick.
const (
	recvBufs     = 4096
	recvBufSize  = 1664
	recvNameLen  = int(unsafe.Sizeof(syscall.RawSockaddrInet6{}))
	recvOutLen   = 16 // struct io_uring_recvmsg_out
	recvPayload  = recvOutLen + recvNameLen + cmsgSpace
	recvCQSlots  = 4 * recvBufs // completions between two reaps: reads, sends, ends
	tagShift     = 62           // the kind of request, in a user data's top bits
	tagSend      = 0
	tagRecv      = 1
	tagCancel    = 2
	readerGenMax = 1<<30 - 1 // a reader's generation, in the user data's bits 32-61
)

// workerIO is one pacer worker's io_uring (pace.Worker): it does the
// worker's socket work in a few io_uring_enter(2) calls per tick instead
// of system calls per packet.
//
//   - Sends: the RTP packets that the worker's sessions send during their
//     Ticks are copied into slots and go out when the Ticks are done
//     (AfterTicks), or mid-tick past maxHeld.
//   - Receives (NewPacerWorker; a NewPacerSendWorker's worker only
//     sends, and its sessions read their own sockets): each session that
//     joined has a multishot recvmsg on its socket, started on the
//     worker's thread at the worker's next AfterTicks. The kernel reads
//     each datagram into a provided buffer (bufRing) when this thread
//     next enters the kernel, with no request
//     of ours per datagram or per tick; AfterTicks hands each session its
//     buffers (reader), which its PostTick (drain) handles and gives
//     back. Before its read starts, or after it ended for want of buffers,
//     a session reads its socket itself.
//
// What it changes on the wire: a session's packet leaves with the rest of
// its worker's tick rather than during its own Tick. On a pacer with
// pace.Config.AlignSends (the node's) that is at the tick's time, so a
// call's packets are spaced by the period; without it, when the Ticks end,
// which moves with what they cost (a measured cause of jitter: at 40 Opus
// calls p99 |D| grew to 2.3 ms with the core 29% busy). A send that fails
// (a full socket buffer, EAGAIN) is counted in failed, after the session
// has already counted the packet as sent: to the peer it is a lost packet,
// which its sequence number gap shows.
//
// With reads it is pace.ThreadBound: the kernel runs a multishot read's
// work on the thread that started it, and only when that thread enters
// the kernel.
type workerIO struct {
	ring    *uring
	bufs    *bufRing
	n       int                     // queued sends
	slots   []*[batchSlots]sendSlot // grown a chunk at a time, up to maxHeld
	sending int                     // sends submitted and not yet reaped
	sends   atomic.Uint64           // sends submitted, over the worker's life
	failed  atomic.Uint64
	done    func(c *uringCQE) // complete, as a func value made once
	recvMsg syscall.Msghdr    // the template of every multishot read

	// mu guards the readers: sessions join and leave from their own
	// goroutines (NewSession, Close), and the worker starts, hands on and
	// cancels their reads under it.
	mu      sync.Mutex
	readers []*reader // by slot, nil when free
	gens    []uint32  // by slot: the generation of its last reader
	free    []uint32  // free slots
	arm     []*reader // readers whose read is to start
	cancel  []uint64  // user data of reads to cancel: their sessions left
	gone    []*reader // readers that left, whose buffers go back
	warned  bool      // a failed enter was logged
}

// reader is a session the worker reads for: its socket, its slot in the
// worker's table, and the buffers that hold the datagrams read for it,
// oldest first. The worker's reaps fill bids and the session's PostTick
// (drain) handles and gives them back, both on the worker's goroutine;
// slot, gen and left are under the worker's mu.
type reader struct {
	w    *workerIO
	fd   int
	slot uint32
	gen  uint32
	bids []uint16
	// live: the multishot read is on, so the session must not read its
	// socket itself (its datagrams would overtake those already read for
	// it).
	live bool
	left bool
}

// userData names r's read in its completions.
func (r *reader) userData() uint64 {
	return tagRecv<<tagShift | uint64(r.gen)<<32 | uint64(r.slot)
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
// io_uring. Where io_uring is unavailable (an old kernel, a sandbox that
// forbids it) it returns nil and the sessions make a system call per
// packet, as they do on any other pacer.
func NewPacerWorker(i int) pace.Worker { return pacerWorker(i, recvBufs) }

// NewPacerSendWorker is NewPacerWorker without the multishot reads: the
// worker's io_uring sends each tick's packets, and each session reads its
// own socket (one recvmmsg in its PostTick). Such a worker has nothing on
// its thread, so the pacer does not lock its goroutine to one, which
// saves the two thread switches every wait of a locked goroutine costs.
// Which of the two is cheaper depends on what a system call costs on the
// machine (docs/decisions.md): serve's --rtp-receive picks.
func NewPacerSendWorker(i int) pace.Worker { return pacerWorker(i, 0) }

// pacerWorker is worker i's workerIO with n read buffers, or nil (logged)
// where io_uring is unavailable.
func pacerWorker(i, n int) pace.Worker {
	w, err := newWorkerIOBufs(n)
	if err != nil {
		slog.Debug("rtp: no io_uring; a system call per packet", "worker", i, "err", err)
		return nil
	}
	return w
}

// newWorkerIOBufs is a workerIO with n read buffers (a power of two;
// recvBufs for NewPacerWorker).
// With n = 0, or where the kernel cannot read multishot (before 6.0) or
// refuses to, the worker only sends: its sessions read for themselves.
func newWorkerIOBufs(n int) (*workerIO, error) {
	r, err := newURing(batchSlots, recvCQSlots)
	if err != nil {
		return nil, err
	}
	w := &workerIO{ring: r}
	w.done = w.complete
	w.recvMsg.Namelen = uint32(recvNameLen)
	w.recvMsg.SetControllen(cmsgSpace)
	if n > 0 && r.full {
		if w.bufs, err = newBufRing(r, 0, n, recvBufSize); err == nil {
			err = w.probe()
			if err != nil {
				w.dropReads()
			}
		}
		if err != nil {
			slog.Debug("rtp: no multishot reads through io_uring; sessions read for themselves", "err", err)
		}
	}
	if w.bufs == nil {
		if err := w.probeSend(); err != nil {
			w.Close()
			return nil, fmt.Errorf("io_uring probe: %w", err)
		}
	}
	return w, nil
}

// dropReads gives up the read buffers after a failed probe: once they are
// unregistered no read can use them. If the kernel refuses to let go, the
// memory stays mapped (a few MB, once).
func (w *workerIO) dropReads() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.bufs.unregister(w.ring); err == nil {
		w.bufs.close()
	}
	w.bufs = nil
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
	w.AfterTicks(time.Time{})
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

// ThreadBound: see workerIO. A worker that only sends has nothing on its
// thread (a UDP send completes within the submitting io_uring_enter).
func (w *workerIO) ThreadBound() bool { return w.bufs != nil }

// probe sends a datagram to itself through the ring and reads it back
// through a multishot read, so that a kernel or sandbox whose io_uring
// sets up but cannot do this socket I/O (one without multishot reads, or
// one that refuses them) is found out before any call's audio goes that
// way. It runs on a thread of its own for the read's sake.
func (w *workerIO) probe() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sk, to, err := probeSock()
	if err != nil {
		return err
	}
	defer sk.close()
	s := &Session{sock: sk}
	w.join(s)
	defer w.AfterTicks(time.Time{}) // cancels the read, here on its thread
	defer w.leave(s)
	w.AfterTicks(time.Time{}) // starts the read
	in := s.rin.Load()
	if !in.live {
		return errors.New("multishot recvmsg through the ring did not start")
	}
	if err := w.probeSendTo(sk, to); err != nil { // sends, then reaps the read
		return err
	}
	defer in.release()
	switch {
	case !in.live:
		return errors.New("multishot recvmsg through the ring ended")
	case len(in.bids) != 1:
		return fmt.Errorf("read back %d datagrams, not the one sent", len(in.bids))
	}
	if data, from, _ := in.datagram(0, time.Now()); string(data) != probeMsg || from.Port() != to.Port() {
		return fmt.Errorf("read back %q from %v, not %q from %v", data, from, probeMsg, to)
	}
	return nil
}

// add queues p for to from sk's socket. It fails only as sock.writeTo
// would before sending: a destination the socket cannot reach.
func (w *workerIO) add(sk *sock, p []byte, to netip.AddrPort) error {
	return w.commit(sk, copy(w.next(), p), to)
}

// next returns the buffer of the packet to queue next (maxBatchPacket
// bytes): a session builds its packet there, where it is sent from, and
// queues it with commit. Until then the buffer is the next add's too.
func (w *workerIO) next() []byte { return w.slot(w.n).buf[:] }

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
		w.mu.Lock()
		w.flush()
		w.mu.Unlock()
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

// AfterTicks sends what the worker's Ticks queued, starts the reads of
// the sessions that joined (or whose read ended), cancels those of the
// sessions that left, and hands each session what was read for it.
func (w *workerIO) AfterTicks(_ time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ring == nil {
		return // closed
	}
	w.flush()
	if w.bufs == nil {
		// A worker that only sends: flush reaped its sends, and nothing
		// else goes through its ring (no reads to start, hand on or
		// cancel), so a last io_uring_enter would find nothing to do.
		return
	}
	for _, r := range w.gone {
		r.release()
	}
	clear(w.gone)
	w.gone = w.gone[:0]
	for _, r := range w.arm {
		if !r.left && !r.live {
			w.ring.recvMultishot(r.fd, &w.recvMsg, w.bufs.group, r.userData())
			r.live = true
		}
	}
	clear(w.arm)
	w.arm = w.arm[:0]
	for _, ud := range w.cancel {
		w.ring.cancel(ud, tagCancel<<tagShift)
	}
	w.cancel = w.cancel[:0]
	w.enterAndReap(0)
}

// enterAndReap enters the kernel (see uring.enter) and hands on what
// completed. The caller holds mu.
func (w *workerIO) enterAndReap(wait int) error {
	err := w.ring.enter(wait)
	if err != nil && !w.warned {
		w.warned = true
		slog.Warn("rtp: io_uring_enter failed", "err", err)
	}
	w.ring.reap(w.done)
	return err
}

// complete handles one completion: a send's, a read's, or a cancel's.
// The caller holds mu.
func (w *workerIO) complete(c *uringCQE) {
	switch c.userData >> tagShift {
	case tagSend:
		if w.sending == 0 {
			return // flush gave up on it (and counted it as failed)
		}
		w.sending--
		if c.res < 0 {
			w.failed.Add(1)
			sendErrors.Add(1)
		}
	case tagRecv:
		var r *reader
		if slot := uint32(c.userData); int(slot) < len(w.readers) {
			if r = w.readers[slot]; r != nil && uint64(r.gen) != c.userData>>32&readerGenMax {
				r = nil // a session that left; its slot went to another
			}
		}
		if c.flags&uringCQEFBuffer != 0 {
			bid := uint16(c.flags >> 16)
			if r != nil && c.res >= 0 && len(r.bids) < drainMax {
				r.bids = append(r.bids, bid)
			} else {
				// Nobody's, or more than a session handles in a tick
				// (a flood): dropped, as a full socket buffer would.
				w.bufs.put(bid)
				w.bufs.publish()
				if r != nil {
					ringDrops.Add(1)
				}
			}
		}
		if c.flags&uringCQEFMore == 0 && r != nil {
			// The read ended: out of buffers (ENOBUFS), a full completion
			// queue, or an error. The session reads for itself until the
			// next AfterTicks starts it again.
			r.live = false
			if c.res >= 0 || c.res == -int32(syscall.ENOBUFS) {
				ringRestarts.Add(1)
				w.arm = append(w.arm, r)
			} else {
				slog.Debug("rtp: multishot read failed; the session reads for itself", "err", syscall.Errno(-c.res))
			}
		}
	}
}

// ringDrops and ringRestarts count, over the process, the datagrams read
// through a worker's ring that were dropped (a session sent more than
// drainMax in a tick) and the multishot reads started again after they
// ended (ENOBUFS: the worker's buffers ran out).
var ringDrops, ringRestarts atomic.Uint64

// join makes the worker read for s, from its next AfterTicks on.
func (w *workerIO) join(s *Session) {
	if w.bufs == nil {
		return // a worker that only sends
	}
	r := &reader{w: w, fd: s.sock.fd, bids: make([]uint16, 0, 4)}
	s.rin.Store(r)
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.free); n > 0 {
		r.slot = w.free[n-1]
		w.free = w.free[:n-1]
		r.gen = (w.gens[r.slot] + 1) & readerGenMax
		w.readers[r.slot] = r
		w.gens[r.slot] = r.gen
	} else {
		r.slot = uint32(len(w.readers))
		w.readers = append(w.readers, r)
		w.gens = append(w.gens, 0)
	}
	w.arm = append(w.arm, r)
}

// leave stops the reads for s. Its multishot read is cancelled at the
// worker's next AfterTicks; until then what it reads is dropped, and the
// kernel keeps the socket open (its port too: Ports skips a port in use).
// s may close its descriptor when leave returns.
func (w *workerIO) leave(s *Session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := s.rin.Load()
	if r == nil || r.left {
		return
	}
	r.left = true
	if r.live {
		w.cancel = append(w.cancel, r.userData())
	}
	w.readers[r.slot] = nil
	w.free = append(w.free, r.slot)
	w.gone = append(w.gone, r)
}

// datagram returns the i-th datagram read for the session, as
// batch.datagram does.
func (r *reader) datagram(i int, now time.Time) ([]byte, netip.AddrPort, time.Time) {
	b := r.w.bufs.buf(r.bids[i])
	nameLen := binary.NativeEndian.Uint32(b[0:])
	ctlLen := binary.NativeEndian.Uint32(b[4:])
	n := int(binary.NativeEndian.Uint32(b[8:])) // the datagram's length, even if it did not fit
	sa := (*syscall.RawSockaddrAny)(unsafe.Pointer(&b[recvOutLen]))
	if nameLen == 0 {
		sa.Addr.Family = syscall.AF_UNSPEC
	}
	ctl := b[recvOutLen+recvNameLen:][:min(int(ctlLen), cmsgSpace)]
	return parseDatagram(b[recvPayload:][:min(n, recvBufSize-recvPayload)], sa, ctl, now)
}

// release gives the session's buffers back to the kernel, once its drain
// has handled them (or the worker, for a session that left).
func (r *reader) release() {
	if len(r.bids) == 0 {
		return
	}
	for _, bid := range r.bids {
		r.w.bufs.put(bid)
	}
	r.w.bufs.publish()
	r.bids = r.bids[:0]
}

// Close releases the ring; the pacer calls it after its last tick, on the
// worker's thread (no session sends or reads through the worker after
// that). The kernel cancels the reads still on.
func (w *workerIO) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ring != nil {
		var err error
		if w.bufs != nil {
			err = w.bufs.unregister(w.ring)
		}
		w.ring.close()
		w.ring = nil
		if w.bufs != nil && err == nil {
			w.bufs.close()
		} // else the kernel may still write the buffers: they stay mapped
		for _, r := range w.readers {
			if r != nil {
				r.live = false
			}
		}
	}
	return nil
}

// flush sends the queued packets and waits for their completions (UDP
// sends complete during the submission). The caller holds mu.
func (w *workerIO) flush() {
	if w.n == 0 {
		return
	}
	for c := 0; c*batchSlots < w.n; c++ {
		for j := range w.slots[c][:min(batchSlots, w.n-c*batchSlots)] {
			sl := &w.slots[c][j]
			w.ring.sendmsg(sl.fd, &sl.msg, tagSend<<tagShift)
		}
	}
	w.sending += w.n
	w.sends.Add(uint64(w.n))
	w.n = 0
	for wait := w.sending; w.sending > 0; wait = 1 {
		if err := w.enterAndReap(wait); err != nil {
			// What never completed counts as failed; a completion that
			// comes after all (the kernel took the request) is not
			// counted twice.
			w.failed.Add(uint64(w.sending))
			sendErrors.Add(uint64(w.sending))
			w.sending = 0
		}
	}
}
