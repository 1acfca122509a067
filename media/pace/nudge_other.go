//go:build !linux

package pace

import "time"

// nudger is Linux's timerfd nudge (nudge_linux.go); elsewhere the pacer
// waits on its timers alone.
type nudger struct{}

func newNudger() *nudger         { return nil }
func (*nudger) at(time.Duration) {}
func (*nudger) close()           {}
func (*nudger) disarm()          {}
