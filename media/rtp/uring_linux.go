package rtp

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/voiced/voiced/media/hugepage"
)

// uring is the least of io_uring(7) a pacer worker needs: a submission
// queue of sendmsg, multishot recvmsg and cancel requests and a completion
// queue to reap. It belongs to one pacer worker, whose goroutine alone
// touches it, on one OS thread (pace.ThreadBound): the kernel runs a
// multishot read's work on the thread that submitted it.
//
// Why: on a virtual machine each system call's entry and exit is dear (the
// hypervisor's interrupt and MSR work, which perf shows as pvm_irq_enable
// and pvm_write_msr). A node sending one packet per call per tick pays it
// per packet with sendto(2) and per call with recvmmsg(2); through the
// ring it pays it a few times per tick. BenchmarkPacer1000SessionsDuplex
// and its Batch twin measure both on the machine at hand.
type uring struct {
	fd     int
	sqHead *uint32 // shared with the kernel, which writes it
	sqTail *uint32 // shared with the kernel, which reads it
	cqHead *uint32 // shared with the kernel, which reads it
	cqTail *uint32 // shared with the kernel, which writes it
	sqMask uint32
	cqMask uint32
	sqes   []uringSQE
	cqes   []uringCQE
	tail   uint32 // next free submission slot (ours until published)
	full   bool   // set up with every flag: a kernel that can read multishot
	ring   []byte // the mmaps, for close
	sqMem  []byte
}

// io_uring_params of io_uring_setup(2).
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringSQE is struct io_uring_sqe (64 bytes) as sendmsg and recvmsg use it.
type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64 // the msghdr
	len         uint32 // 1 message
	msgFlags    uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	_           uint64
}

// uringCQE is struct io_uring_cqe (16 bytes, no big CQEs).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

const (
	sysIOUringSetup = 425 // the same number on every Linux architecture
	sysIOUringEnter = 426

	sysIOUringRegister = 427

	uringOpSendmsg       = 9
	uringOpRecvmsg       = 10
	uringOpAsyncCancel   = 14
	uringSQEBufferSelect = 1 << 5 // IOSQE_BUFFER_SELECT: read into a provided buffer
	uringRecvMultishot   = 1 << 1 // IORING_RECV_MULTISHOT, in the SQE's ioprio
	uringCQEFBuffer      = 1 << 0 // IORING_CQE_F_BUFFER: the buffer ID is in flags>>16
	uringCQEFMore        = 1 << 1 // IORING_CQE_F_MORE: the multishot request goes on
	uringEnterGetEvents  = 1
	uringOffSQES         = 0x10000000
	uringFeatSingleMmap  = 1 << 0
	uringSetupCQSize     = 1 << 3 // the completion queue's size is ours to set
	uringSetupSubmitAll  = 1 << 7 // keep submitting past a request that fails to start
	uringSetupCoopTask   = 1 << 8 // no interrupt to run completion work: it runs at our next system call
	uringRegisterPbuf    = 22     // IORING_REGISTER_PBUF_RING
	uringUnregisterPbuf  = 23     // IORING_UNREGISTER_PBUF_RING
)

// newURing sets up a ring of entries submission slots and cqEntries
// completion slots, or returns the reason it cannot (ENOSYS on old
// kernels, EPERM where a sandbox forbids io_uring); callers then make a
// system call per packet. On a kernel before 5.19 the ring has the
// default completion queue and is not full: it is for sends alone.
func newURing(entries, cqEntries uint32) (*uring, error) {
	var p uringParams
	p.flags = uringSetupSubmitAll | uringSetupCoopTask | uringSetupCQSize
	p.cqEntries = cqEntries
	fd, _, e := syscall.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	full := e == 0
	if e == syscall.EINVAL {
		// A kernel before 5.19 knows neither SUBMIT_ALL nor COOP_TASKRUN
		// (nor multishot reads): a ring for sends alone.
		p = uringParams{}
		fd, _, e = syscall.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	}
	if e != 0 {
		return nil, e
	}
	r := &uring{fd: int(fd), full: full}
	if p.features&uringFeatSingleMmap == 0 {
		r.close()
		return nil, errors.New("io_uring without a single ring mapping (kernel before 5.4)")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	var err error
	r.ring, err = syscall.Mmap(r.fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, err
	}
	r.sqMem, err = syscall.Mmap(r.fd, uringOffSQES, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, err
	}
	base := unsafe.Pointer(&r.ring[0])
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(base, off)) }
	r.sqHead, r.sqTail, r.sqMask = at(p.sqOff.head), at(p.sqOff.tail), *at(p.sqOff.ringMask)
	r.cqHead, r.cqTail, r.cqMask = at(p.cqOff.head), at(p.cqOff.tail), *at(p.cqOff.ringMask)
	// Slot i of the submission array always names SQE i: SQEs are
	// filled in ring order, so the indirection is the identity.
	array := unsafe.Slice(at(p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Add(base, p.cqOff.cqes)), p.cqEntries)
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

// sendmsg queues a non-blocking sendmsg of msg on fd; msg and what it
// points at must stay put until its completion.
func (r *uring) sendmsg(fd int, msg *syscall.Msghdr, userData uint64) {
	r.push(uringSQE{
		opcode:   uringOpSendmsg,
		fd:       int32(fd),
		addr:     uint64(uintptr(unsafe.Pointer(msg))),
		len:      1,
		msgFlags: syscall.MSG_DONTWAIT, // fail with EAGAIN rather than wait for the socket
		userData: userData,
	})
}

// recvMultishot queues a multishot recvmsg on fd: from now on each
// datagram the socket receives is read into a buffer of group, in the
// layout of struct io_uring_recvmsg_out with msg's name and control
// lengths, and completes with IORING_CQE_F_MORE while the read goes on.
// The kernel copies msg when it takes the request.
func (r *uring) recvMultishot(fd int, msg *syscall.Msghdr, group uint16, userData uint64) {
	r.push(uringSQE{
		opcode:   uringOpRecvmsg,
		flags:    uringSQEBufferSelect,
		ioprio:   uringRecvMultishot,
		fd:       int32(fd),
		addr:     uint64(uintptr(unsafe.Pointer(msg))),
		userData: userData,
		bufIndex: group,
	})
}

// cancel queues the cancellation of the request with user data target.
func (r *uring) cancel(target, userData uint64) {
	r.push(uringSQE{opcode: uringOpAsyncCancel, fd: -1, addr: target, userData: userData})
}

// push fills the next submission slot, first handing the kernel what the
// queue holds if it is full.
func (r *uring) push(e uringSQE) {
	if r.tail-atomic.LoadUint32(r.sqHead) == uint32(len(r.sqes)) {
		r.enter(0)
	}
	r.sqes[r.tail&r.sqMask] = e
	r.tail++
}

// enter hands the kernel every request queued since the last enter and,
// with wait > 0, waits until the completion queue holds at least wait
// completions. On the way the kernel runs the work it queued for this
// thread: the reads of the multishot requests whose sockets received
// something. A raw system call: nothing blocks for long (UDP sends
// complete during the call), so the runtime need not hand the P off.
// EINTR, EAGAIN and EBUSY (a full completion queue) are not errors: the
// caller reaps and enters again.
func (r *uring) enter(wait int) error {
	atomic.StoreUint32(r.sqTail, r.tail)
	_, _, e := syscall.RawSyscall6(sysIOUringEnter, uintptr(r.fd), uintptr(len(r.sqes)), uintptr(wait), uringEnterGetEvents, 0, 0)
	if e != 0 && e != syscall.EINTR && e != syscall.EAGAIN && e != syscall.EBUSY {
		return e
	}
	return nil
}

// reap passes each completion to done and frees its slot.
func (r *uring) reap(done func(c *uringCQE)) {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for h := head; h != tail; h++ {
		done(&r.cqes[h&r.cqMask])
	}
	atomic.StoreUint32(r.cqHead, tail)
}

// register is io_uring_register(2).
func (r *uring) register(op uintptr, arg unsafe.Pointer, n uintptr) error {
	_, _, e := syscall.Syscall6(sysIOUringRegister, uintptr(r.fd), op, uintptr(arg), n, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (r *uring) close() {
	if r.sqMem != nil {
		syscall.Munmap(r.sqMem)
	}
	if r.ring != nil {
		syscall.Munmap(r.ring)
	}
	syscall.Close(r.fd)
}

// bufRing is a ring of provided buffers (IORING_REGISTER_PBUF_RING) that
// multishot reads fill: the kernel takes buffers from its head, we give
// them back at its tail once their datagram is handled. Buffers live in
// memory of their own (mmap), outside Go's heap, since the kernel writes
// them whenever a datagram arrives.
type bufRing struct {
	ents  []uringBuf // shared with the kernel, which reads them
	mem   []byte     // the buffers, len(ents) of size bytes
	unmap func() error
	size  int
	group uint16
	tail  uint16 // ours until published
	ringM []byte // the ring's mmap, for close
}

// uringBuf is struct io_uring_buf; the first one's resv field is the
// ring's tail.
type uringBuf struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// uringBufReg is struct io_uring_buf_reg.
type uringBufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// newBufRing registers a ring of n buffers of size bytes as group on r
// and gives the kernel all of them; n is a power of two.
func newBufRing(r *uring, group uint16, n, size int) (*bufRing, error) {
	if !littleEndian {
		return nil, errors.New("buffer ring tail: little-endian machines only")
	}
	b := &bufRing{group: group, size: size}
	var err error
	page := syscall.Getpagesize()
	if b.ringM, err = syscall.Mmap(-1, 0, (n*int(unsafe.Sizeof(uringBuf{}))+page-1)/page*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_POPULATE); err != nil {
		return nil, err
	}
	// On huge pages: each datagram lands in whichever buffer is free, so
	// on 4 KB pages nearly every read's first touch missed the TLB.
	if b.mem, b.unmap, err = hugepage.Map(n * size); err != nil {
		b.close()
		return nil, err
	}
	b.ents = unsafe.Slice((*uringBuf)(unsafe.Pointer(&b.ringM[0])), n)
	reg := uringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&b.ringM[0]))), ringEntries: uint32(n), bgid: group}
	if err := r.register(uringRegisterPbuf, unsafe.Pointer(&reg), 1); err != nil {
		b.close()
		return nil, fmt.Errorf("register buffer ring: %w", err)
	}
	for i := range n {
		b.put(uint16(i))
	}
	b.publish()
	return b, nil
}

// put queues buffer bid for the kernel; publish hands the queued ones
// over.
func (b *bufRing) put(bid uint16) {
	e := &b.ents[int(b.tail)&(len(b.ents)-1)]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.mem[int(bid)*b.size])))
	e.len = uint32(b.size)
	e.bid = bid
	b.tail++
}

// publish stores the tail where the kernel reads it: the 16 bits after
// the first entry's bid, written together with that bid (ours, unchanged)
// in one atomic 32-bit store, since Go has no atomic 16-bit one.
func (b *bufRing) publish() {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.ents[0].bid)), uint32(b.ents[0].bid)|uint32(b.tail)<<16)
}

// buf returns buffer bid.
func (b *bufRing) buf(bid uint16) []byte {
	return b.mem[int(bid)*b.size : (int(bid)+1)*b.size]
}

// unregister takes the buffers back from r: once it returns no read can
// pick one (the kernel reads under the ring's lock, which it takes), so
// the memory may go after r closes.
func (b *bufRing) unregister(r *uring) error {
	reg := uringBufReg{bgid: b.group}
	return r.register(uringUnregisterPbuf, unsafe.Pointer(&reg), 1)
}

// close unmaps the memory: after unregister, or if it never registered.
func (b *bufRing) close() {
	if b.unmap != nil {
		b.unmap()
	}
	if b.ringM != nil {
		syscall.Munmap(b.ringM)
	}
}

// littleEndian: the buffer ring's publish relies on the byte order.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
