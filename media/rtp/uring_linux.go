package rtp

import (
	"errors"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// uring is the least of io_uring(7) a pacer worker needs: a submission
// queue of sendmsg and recvmsg requests, submitted and completed by one
// io_uring_enter(2). It belongs to one pacer worker, whose goroutine alone
// touches it, one tick at a time.
//
// Why: on a virtual machine each system call's entry and exit is dear (the
// hypervisor's interrupt and MSR work, which perf shows as pvm_irq_enable
// and pvm_write_msr). A node sending one packet per call per tick pays it
// per packet with sendto(2) and per call with recvmmsg(2); through the
// ring it pays it a few times per tick. BenchmarkPacer1000SessionsDuplex
// and its Batch twin measure both on the machine at hand.
type uring struct {
	fd     int
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

	uringOpSendmsg      = 9
	uringOpRecvmsg      = 10
	uringSQELink        = 1 << 2 // IOSQE_IO_LINK
	uringEnterGetEvents = 1
	uringOffSQES        = 0x10000000
	uringFeatSingleMmap = 1 << 0
	uringSetupSubmitAll = 1 << 7 // keep submitting past a request that fails to start
	uringSetupCoopTask  = 1 << 8 // no interrupt to run completion work: we reap right away
)

// newURing sets up a ring of entries submission slots, or returns the
// reason it cannot (ENOSYS on old kernels, EPERM where a sandbox forbids
// io_uring); callers then send with one system call per packet.
func newURing(entries uint32) (*uring, error) {
	var p uringParams
	p.flags = uringSetupSubmitAll | uringSetupCoopTask
	fd, _, e := syscall.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e == syscall.EINVAL { // a kernel older than 5.19 knows neither flag
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
	r.sqTail, r.sqMask = at(p.sqOff.tail), *at(p.sqOff.ringMask)
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

// sendmsg fills the next submission slot with a non-blocking sendmsg of
// msg on fd; msg and what it points at must stay put until submit returns.
func (r *uring) sendmsg(fd int, msg *syscall.Msghdr, userData uint64) {
	r.push(uringOpSendmsg, fd, msg, userData, 0)
}

// recvmsg fills the next submission slot with a non-blocking recvmsg into
// msg; link chains it to the next request, which then runs only if this
// one read a datagram (one that finds the socket empty fails with EAGAIN,
// and the rest of its chain completes with ECANCELED).
func (r *uring) recvmsg(fd int, msg *syscall.Msghdr, userData uint64, link bool) {
	var flags uint8
	if link {
		flags = uringSQELink
	}
	r.push(uringOpRecvmsg, fd, msg, userData, flags)
}

func (r *uring) push(op uint8, fd int, msg *syscall.Msghdr, userData uint64, flags uint8) {
	r.sqes[r.tail&r.sqMask] = uringSQE{
		opcode:   op,
		flags:    flags,
		fd:       int32(fd),
		addr:     uint64(uintptr(unsafe.Pointer(msg))),
		len:      1,
		msgFlags: syscall.MSG_DONTWAIT, // fail with EAGAIN rather than wait for the socket
		userData: userData,
	}
	r.tail++
}

// submit hands the kernel the n requests filled since the last submit and
// waits for all of them to complete (UDP sends complete during the call,
// so there is no waiting in practice), then calls done with each one's
// user data and result (bytes sent, or a negated errno). A raw system
// call: nothing blocks, so the runtime need not hand the P off.
func (r *uring) submit(n int, done func(userData uint64, res int32)) error {
	if n == 0 {
		return nil
	}
	atomic.StoreUint32(r.sqTail, r.tail)
	for left := n; ; {
		// Asking to submit n again after an interrupted wait is harmless:
		// the kernel submits only what the queue still holds.
		_, _, e := syscall.RawSyscall6(sysIOUringEnter, uintptr(r.fd), uintptr(n), uintptr(left), uringEnterGetEvents, 0, 0)
		if left -= r.reap(done); left <= 0 {
			return nil
		}
		if e != 0 && e != syscall.EINTR && e != syscall.EAGAIN && e != syscall.EBUSY {
			return e // what is still in flight is reaped by the next submit
		}
	}
}

// reap passes each completion to done and frees its slot.
func (r *uring) reap(done func(userData uint64, res int32)) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for h := head; h != tail; h++ {
		c := &r.cqes[h&r.cqMask]
		done(c.userData, c.res)
	}
	atomic.StoreUint32(r.cqHead, tail)
	return int(tail - head)
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
