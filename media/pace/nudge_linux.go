package pace

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// nudger wakes the runtime's scheduler when one of the pacer's timers is
// due, where the timer alone would not. With one P (a node pinned to one
// core) and nothing else to run, the GC's idle mark worker takes the P,
// and until it stops (at the end of the mark phase, or when the runtime's
// monitor preempts it after 10 ms or more) nothing looks at the timers: a
// tick due meanwhile waited for the whole phase, 38 ms on a node at 600
// calls with a 250 MB heap (TestTicksOnTimeWhileGCMarks: 57-88 ms). The
// worker does stop for network readiness, which it polls every few tens
// of microseconds of marking: so the nudger arms a timerfd a little after
// the timer's deadline, and a goroutine parked on reading it (in the
// netpoller) becomes runnable when it fires. The worker yields, and the
// scheduler, before it runs anything, runs the timers that are due: the
// pacer's among them. When the timer wins, as it does unless the GC holds
// the P, the pacer disarms the nudge: armed with the same deadline, every
// wait woke the nudger too, and a node at 200 calls spent 15% more CPU
// per packet (bench/RESULTS-voicebench.md).
type nudger struct {
	f  *os.File
	fd int // f's descriptor, nonblocking (f.Fd would make it blocking)
}

// newNudger returns nil where timerfd is not available: the pacer then
// waits on its timers alone.
func newNudger() *nudger {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	n := &nudger{f: os.NewFile(uintptr(fd), "pace-nudge"), fd: fd}
	go n.run()
	return n
}

// at arms the nudge for d from now, replacing the one armed before.
func (n *nudger) at(d time.Duration) {
	if n == nil {
		return
	}
	v := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	_ = unix.TimerfdSettime(n.fd, 0, &v, nil)
}

// disarm cancels the armed nudge, if it has not fired.
func (n *nudger) disarm() {
	if n == nil {
		return
	}
	var v unix.ItimerSpec
	_ = unix.TimerfdSettime(n.fd, 0, &v, nil)
}

// run parks on the timerfd until close; being woken is all it is for.
func (n *nudger) run() {
	var b [8]byte
	for {
		if _, err := n.f.Read(b[:]); err != nil {
			return
		}
	}
}

// close ends run. The goroutine that arms the nudge calls it, after its
// last at.
func (n *nudger) close() {
	if n != nil {
		_ = n.f.Close()
	}
}
