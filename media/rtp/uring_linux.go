package rtp

import (
	"errors"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// uring is the least of io_uring(7) a pacer worker needs: a submission
// queue of sendmsg requests and a completion queue to reap. It belongs to
// one pacer worker, whose goroutine alone touches it.
//
// Why: each system call's entry and exit has a price (on a virtual
// machine, the hypervisor's interrupt and MSR work, which perf shows as
// pvm_irq_enable and pvm_write_msr on PVM guests). A node sending one
// packet per call per tick pays it per packet with sendto(2); through the
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

// uringSQE is struct io_uring_sqe (64 bytes) as sendmsg uses it.
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

	uringOpSendmsg      = 9
	uringEnterGetEvents = 1
	uringOffSQES        = 0x10000000
	uringFeatSingleMmap = 1 << 0
	uringSetupCQSize    = 1 << 3 // the completion queue's size is ours to set
	uringSetupSubmitAll = 1 << 7 // keep submitting past a request that fails to start
	uringSetupCoopTask  = 1 << 8 // no interrupt to run completion work: it runs at our next system call
)

// newURing sets up a ring of entries submission slots and cqEntries
// completion slots, or returns the reason it cannot (ENOSYS on old
// kernels, EPERM where a sandbox forbids io_uring); callers then make a
// system call per packet. On a kernel before 5.19 the ring has the
// default completion queue.
func newURing(entries, cqEntries uint32) (*uring, error) {
	var p uringParams
	p.flags = uringSetupSubmitAll | uringSetupCoopTask | uringSetupCQSize
	p.cqEntries = cqEntries
	fd, _, e := syscall.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e == syscall.EINVAL {
		// A kernel before 5.19 knows neither SUBMIT_ALL nor COOP_TASKRUN.
		p = uringParams{}
		fd, _, e = syscall.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	}
	if e != 0 {
		return nil, e
	}
	r := &uring{fd: int(fd)}
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
// completions. A raw system call: nothing blocks for long (UDP sends
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

func (r *uring) close() {
	if r.sqMem != nil {
		syscall.Munmap(r.sqMem)
	}
	if r.ring != nil {
		syscall.Munmap(r.ring)
	}
	syscall.Close(r.fd)
}
