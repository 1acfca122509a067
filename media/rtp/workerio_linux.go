package rtp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
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

// ringReads is how many datagrams a worker reads for each of its sessions
// per tick through the ring: a chain of reads that stops at the first
// that finds the socket empty. A call brings one packet per tick, so the
// second read usually finds nothing, which tells the session that its
// socket is drained without a system call of its own; after two packets
// the session reads the rest itself (drain).
const ringReads = 2

// workerIO is one pacer worker's io_uring (pace.Worker): it does the
// worker's socket work of a tick in a few io_uring_enter(2) calls instead
// of one system call per packet.
//
//   - Sends: the RTP packets that the worker's sessions send during their
//     Ticks are copied into slots and go out when the Ticks are done
//     (AfterTicks), or mid-tick past maxHeld.
//   - Receives: then, for each of its sessions, it reads up to ringReads
//     datagrams into the session's ringRecv, which the session's PostTick
//     (drain) handles.
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
type workerIO struct {
	ring   *uring
	n      int                     // queued sends
	slots  []*[batchSlots]sendSlot // grown a chunk at a time, up to maxHeld
	failed atomic.Uint64
	sent   func(userData uint64, res int32)
	got    func(userData uint64, res int32)

	// mu guards the sessions that read through the ring: they join and
	// leave from their own goroutines (NewSession, Close); AfterTicks
	// reads under it, so a session that has left is not read for again
	// and may close its socket.
	mu     sync.Mutex
	recv   []reader
	part   []reader // the readers of the submission in progress
	broken bool     // a submission of reads failed: no more reads here
}

// reader is a session the worker reads for: its socket and its slots.
type reader struct {
	s  *Session
	fd int
	in *ringRecv
}

// sendSlot is one queued packet and the msghdr that sends it.
type sendSlot struct {
	fd   int
	msg  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrInet6
	buf  [maxBatchPacket]byte
}

// ringRecv is a session's share of its worker's reads: ringReads
// datagrams, filled in AfterTicks and handled in the session's PostTick.
type ringRecv struct {
	slots [ringReads]recvSlot
	ready bool // slots hold this tick's reads
}

// recvSlot is one datagram read through the ring, with its source and
// control message (the kernel's arrival time).
type recvSlot struct {
	msg  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrAny
	ctl  [cmsgSpace]byte
	buf  [1500]byte
	res  int32 // bytes read, or a negated errno (EAGAIN: the socket was empty)
}

// NewPacerWorker is pace.Config.NewWorker for a pacer that drives
// sessions (Config.Pacer): each worker gets a workerIO on its own
// io_uring. Where io_uring is unavailable (an old kernel, a sandbox that
// forbids it) it returns nil and the sessions make a system call per
// packet, as they do on any other pacer.
func NewPacerWorker(i int) pace.Worker {
	w, err := newWorkerIO()
	if err != nil {
		slog.Debug("rtp: no io_uring; a system call per packet", "worker", i, "err", err)
		return nil
	}
	return w
}

func newWorkerIO() (*workerIO, error) {
	r, err := newURing(batchSlots)
	if err != nil {
		return nil, err
	}
	w := &workerIO{ring: r}
	w.sent = func(_ uint64, res int32) {
		if res < 0 {
			w.failed.Add(1)
			sendErrors.Add(1)
		}
	}
	w.got = func(userData uint64, res int32) {
		w.part[userData/ringReads].in.slots[userData%ringReads].res = res
	}
	if err := w.probe(); err != nil {
		w.Close()
		return nil, fmt.Errorf("io_uring probe: %w", err)
	}
	return w, nil
}

// probe sends a datagram to itself through the ring and reads it back
// through the ring, so that a kernel or sandbox whose io_uring sets up but
// cannot do socket I/O (one without sendmsg or recvmsg requests, or one
// that refuses them) is found out before any call's audio goes that way.
func (w *workerIO) probe() error {
	sk, err := listenSock(netip.IPv4Unspecified(), 0)
	if err != nil {
		return err
	}
	defer sk.close()
	sa, err := syscall.Getsockname(sk.fd)
	if err != nil {
		return err
	}
	sa4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		return fmt.Errorf("bound to %T", sa)
	}
	to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa4.Port))
	msg := []byte("voiced io_uring probe")
	if err := w.add(sk, msg, to); err != nil {
		return err
	}
	w.flush()
	if n := w.failed.Load(); n != 0 {
		return errors.New("sendmsg through the ring failed")
	}
	s := &Session{sock: sk}
	w.join(s)
	defer w.leave(s)
	w.AfterTicks(time.Time{})
	in := s.rin.Load()
	n, _, ok := in.take()
	switch {
	case w.broken || !ok:
		return errors.New("recvmsg through the ring failed")
	case n != 1 || in.slots[0].res != int32(len(msg)) || string(in.slots[0].buf[:len(msg)]) != string(msg):
		return fmt.Errorf("read back %d datagrams (first: %d bytes), not the one sent", n, in.slots[0].res)
	}
	return nil
}

// add queues p for to from sk's socket. It fails only as sock.writeTo
// would before sending: a destination the socket cannot reach.
func (w *workerIO) add(sk *sock, p []byte, to netip.AddrPort) error {
	sl := w.slot(w.n)
	salen, err := sk.sockaddr(&sl.name, to)
	if err != nil {
		return err
	}
	sl.fd = sk.fd
	sl.msg.Namelen = uint32(salen)
	sl.iov.SetLen(copy(sl.buf[:], p))
	if w.n++; w.n == maxHeld {
		w.flush()
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

// AfterTicks sends what the worker's Ticks queued, then reads for every
// session that joined.
func (w *workerIO) AfterTicks(_ time.Time) {
	w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		return
	}
	per := batchSlots / ringReads
	for i := 0; i < len(w.recv); i += per {
		w.read(w.recv[i:min(i+per, len(w.recv))])
	}
}

// read reads up to ringReads datagrams for each reader of rs in one
// submission: per reader a chain of reads linked so that the first to
// find the socket empty cancels the rest.
func (w *workerIO) read(rs []reader) {
	for i, r := range rs {
		for k := range r.in.slots {
			sl := &r.in.slots[k]
			sl.msg.Namelen = uint32(unsafe.Sizeof(sl.name))
			sl.msg.SetControllen(cmsgSpace)
			w.ring.recvmsg(r.fd, &sl.msg, uint64(i*ringReads+k), k < ringReads-1)
		}
	}
	w.part = rs
	err := w.ring.submit(len(rs)*ringReads, w.got)
	w.part = nil
	if err != nil {
		// Reads may still be in flight into the sessions' slots, which
		// only the sessions' own drains may use from now on: stop reading
		// through the ring for good.
		slog.Warn("rtp: io_uring reads failed; sessions read for themselves from now on", "err", err)
		w.broken = true
		return
	}
	for _, r := range rs {
		r.in.ready = true
	}
}

// join makes the worker read for s from the next tick on.
func (w *workerIO) join(s *Session) {
	in := new(ringRecv)
	for k := range in.slots {
		sl := &in.slots[k]
		sl.iov.Base = &sl.buf[0]
		sl.iov.SetLen(len(sl.buf))
		sl.msg.Name = (*byte)(unsafe.Pointer(&sl.name))
		sl.msg.Iov = &sl.iov
		sl.msg.Iovlen = 1
		sl.msg.Control = &sl.ctl[0]
	}
	s.rin.Store(in)
	w.mu.Lock()
	w.recv = append(w.recv, reader{s: s, fd: s.sock.fd, in: in})
	w.mu.Unlock()
}

// leave stops the reads for s; when it returns, no read of s's socket is
// in progress, so s may close it.
func (w *workerIO) leave(s *Session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.IndexFunc(w.recv, func(r reader) bool { return r.s == s }); i >= 0 {
		last := len(w.recv) - 1
		w.recv[i] = w.recv[last]
		w.recv[last] = reader{}
		w.recv = w.recv[:last]
	}
}

// take hands drain the datagrams read for it this tick: how many, and
// whether the socket may hold more (every read found one). ok is false
// when nothing was read for it (it joined after this tick's reads).
func (in *ringRecv) take() (n int, more, ok bool) {
	if !in.ready {
		return 0, false, false
	}
	in.ready = false
	for n < len(in.slots) && in.slots[n].res >= 0 {
		n++
	}
	return n, n == len(in.slots), true
}

// datagram returns the i-th datagram read, as batch.datagram does.
func (in *ringRecv) datagram(i int, now time.Time) ([]byte, netip.AddrPort, time.Time) {
	sl := &in.slots[i]
	return parseDatagram(sl.buf[:min(int(sl.res), len(sl.buf))], &sl.name, sl.ctl[:min(int(sl.msg.Controllen), cmsgSpace)], now)
}

// Close releases the ring; the pacer calls it after its last tick (no
// session sends or reads through the worker after that).
func (w *workerIO) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ring != nil {
		w.ring.close()
		w.ring = nil
		w.broken = true
	}
	return nil
}

// flush sends the queued packets, a ring's worth per submission.
func (w *workerIO) flush() {
	for c := 0; c*batchSlots < w.n; c++ {
		k := min(batchSlots, w.n-c*batchSlots)
		for j := range w.slots[c][:k] {
			sl := &w.slots[c][j]
			w.ring.sendmsg(sl.fd, &sl.msg, 0)
		}
		if err := w.ring.submit(k, w.sent); err != nil {
			w.failed.Add(uint64(k))
			sendErrors.Add(uint64(k))
		}
	}
	w.n = 0
}
