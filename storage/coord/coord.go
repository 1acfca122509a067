package coord

import (
	"crypto/rand"
	"encoding/hex"
)

// Coordinator is every coordination service together, for wiring in cmd/voiced.
// Consumers should depend on the one small interface they use.
type Coordinator interface {
	Registry
	Placer
	Commander
	EventStream
	Counter
	Limiter
	Semaphore
	Locker
}

// OrgKey returns the key for name scoped to the organization orgID, so that limits and
// counters of different organizations never share a key.
func OrgKey(orgID, name string) string {
	return "org:" + orgID + ":" + name
}

// NewToken returns a random 128-bit hex string for lock and lease tokens and for event
// and command ids left empty by callers.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
