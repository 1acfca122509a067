package coord

import (
	"math/rand/v2"
	"time"
)

// Defaults applied by [Config.WithDefaults] to zero (or negative) fields.
const (
	DefaultNodeTTL       = 4 * time.Second
	DefaultVisibility    = 30 * time.Second
	DefaultStreamMaxLen  = 100_000
	DefaultCommandMaxLen = 1_000
	DefaultHotCPU        = 0.9
)

// Config holds the behaviour shared by every implementation. The zero value is usable:
// zero fields take the defaults above. Implementations copy it at construction.
type Config struct {
	// NodeTTL is how long a node stays live after its last heartbeat. Nodes heartbeat
	// every second, so the default of 4 s tolerates two lost beats, and a node that
	// dies is out of placement within 4 s and has its calls ended within 5 s
	// (docs/decisions.md, "Loss of a media node").
	NodeTTL time.Duration

	// Visibility is how long an event read from a stream stays invisible to the other
	// consumers of the group before it is redelivered if not acknowledged. It must
	// exceed the slowest normal processing time of one batch.
	Visibility time.Duration

	// StreamMaxLen bounds how many events each event stream retains; older events are
	// trimmed (approximately, in Redis) even if a group has not read them yet.
	StreamMaxLen int64

	// CommandMaxLen bounds how many commands are retained per node for subscribers
	// catching up after a reconnect.
	CommandMaxLen int64

	// HotCPU is the CPU fraction (0..1) from which a node counts as saturated in
	// placement: a saturated node loses against any node below it, whatever the calls.
	HotCPU float64

	// Intn returns a uniform random integer in [0, n). Nil means math/rand/v2.IntN.
	// Tests inject a scripted sequence to make [Placer.Pick] deterministic. It must be
	// safe for concurrent use.
	Intn func(n int) int

	// Now is the clock for expiry decisions of the in-process implementation. Nil means
	// time.Now. rediscoord ignores it and uses the Redis server clock.
	Now func() time.Time
}

// WithDefaults returns c with zero or out-of-range fields replaced by their defaults.
func (c Config) WithDefaults() Config {
	if c.NodeTTL <= 0 {
		c.NodeTTL = DefaultNodeTTL
	}
	if c.Visibility <= 0 {
		c.Visibility = DefaultVisibility
	}
	if c.StreamMaxLen <= 0 {
		c.StreamMaxLen = DefaultStreamMaxLen
	}
	if c.CommandMaxLen <= 0 {
		c.CommandMaxLen = DefaultCommandMaxLen
	}
	if c.HotCPU <= 0 || c.HotCPU > 1 {
		c.HotCPU = DefaultHotCPU
	}
	if c.Intn == nil {
		c.Intn = rand.IntN
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
