package pace

import (
	"syscall"
	"time"
	"unsafe"
)

// sleepHoldingP sleeps for d with nanosleep(2) as a raw system call: the
// runtime does not see it, so the goroutine keeps its P and runs again the
// moment the kernel wakes the thread, without queueing for a P. Signals
// (the runtime's preemption) end the sleep early; it sleeps on for what
// is left.
func sleepHoldingP(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		_, _, e := syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&left)), 0)
		if e != syscall.EINTR {
			return
		}
		ts = left
	}
}
