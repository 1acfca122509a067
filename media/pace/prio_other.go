//go:build !linux

package pace

import (
	"errors"
	"time"
)

// setThreadFIFO, kernelSleep and kick are Linux's (prio_linux.go);
// elsewhere Config.Realtime ticks on the runtime's timers and channels.
func setThreadFIFO(int) error { return errors.New("SCHED_FIFO threads are Linux only") }

// RealtimeAllowed: never elsewhere than Linux.
func RealtimeAllowed(prio int) error { return setThreadFIFO(prio) }

func kernelSleep(d time.Duration) { time.Sleep(d) }

// kick is Linux's eventfd wake-up; elsewhere workers wait on channels.
type kick struct{}

func newKick() *kick  { return nil }
func (*kick) signal() {}
func (*kick) wait()   {}
func (*kick) close()  {}
