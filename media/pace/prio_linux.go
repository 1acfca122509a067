package pace

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setThreadFIFO puts the calling thread in the SCHED_FIFO real-time class
// at prio (1..99).
func setThreadFIFO(prio int) error {
	a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(0, &a, 0); err != nil {
		return fmt.Errorf("sched_setattr(SCHED_FIFO %d): %w", prio, err)
	}
	return nil
}

// RealtimeAllowed reports (nil) whether this process may run a thread in
// SCHED_FIFO at prio, as Config.Realtime asks: it tries on a thread of
// its own, which then exits with its class (a locked goroutine's thread
// ends with it).
func RealtimeAllowed(prio int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		errc <- setThreadFIFO(prio)
	}()
	return <-errc
}

// kernelSleep sleeps d in clock_nanosleep(2) as a blocking system call:
// the kernel wakes the thread at the time itself, with no timer of the
// runtime in between, and the runtime lends the goroutine's P to others
// meanwhile. On return the thread takes its P back, or an idle one: with
// none, the goroutine queues for one like any other.
func kernelSleep(d time.Duration) {
	var now unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	ts := unix.NsecToTimespec(now.Nano() + int64(d))
	for {
		_, _, e := syscall.Syscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

// kick wakes a worker's thread through the kernel: the worker blocks in
// read(2) on an eventfd, so its thread, not a goroutine queued for a P,
// is what the clock's write wakes.
type kick struct{ fd int }

func newKick() *kick {
	// A semaphore: each wait takes one signal, so the clock can wait for
	// each of its workers' in turn on one kick.
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_SEMAPHORE)
	if err != nil {
		return nil
	}
	return &kick{fd: fd}
}

// signal wakes the waiting worker (or the next wait).
func (k *kick) signal() {
	b := [8]byte{1}
	_, _ = unix.Write(k.fd, b[:])
}

// wait blocks the calling thread until signal.
func (k *kick) wait() {
	var b [8]byte
	for {
		_, _, e := syscall.Syscall(unix.SYS_READ, uintptr(k.fd), uintptr(unsafe.Pointer(&b[0])), 8)
		if e != syscall.EINTR {
			return
		}
	}
}

// close releases the eventfd; a nil kick (never made) has none.
func (k *kick) close() {
	if k != nil {
		_ = unix.Close(k.fd)
	}
}
