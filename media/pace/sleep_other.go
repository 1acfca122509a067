//go:build !linux

package pace

import "time"

// sleepHoldingP is time.Sleep where the raw nanosleep is not wired up:
// PreciseWake then gains nothing.
func sleepHoldingP(d time.Duration) { time.Sleep(d) }
