// Package coordtest is the contract suite every coord implementation passes. It checks
// behaviour through the coord interfaces only, with short TTLs and real time, so the
// same assertions hold for the in-process and the Redis implementations.
package coordtest

import (
	"testing"
	"time"

	"github.com/voiced/voiced/storage/coord"
)

// Timings of the tests about expiry, short so the suite runs in seconds; the margins
// between them absorb scheduling delays on a loaded machine. The other tests use
// timeouts of a minute so a slow machine cannot expire what they rely on.
const (
	// NodeTTL is the node time-to-live of the expiry tests.
	NodeTTL = 400 * time.Millisecond
	// Visibility is the event visibility timeout of the redelivery tests.
	Visibility = 600 * time.Millisecond
)

// NewFunc returns a fresh, empty coordinator built from cfg, isolated from every other
// coordinator the suite creates (for Redis: its own key prefix). It registers its own
// cleanup with t.Cleanup.
type NewFunc func(t *testing.T, cfg coord.Config) coord.Coordinator

// Config returns the configuration of the expiry and redelivery tests.
func Config() coord.Config {
	return coord.Config{NodeTTL: NodeTTL, Visibility: Visibility}
}

// stable returns the configuration of the tests where nothing should expire.
func stable() coord.Config {
	return coord.Config{NodeTTL: time.Minute, Visibility: time.Minute}
}

// Run runs the whole contract against coordinators made by newCoord. Subtests run in
// parallel, each with its own coordinator.
func Run(t *testing.T, newCoord NewFunc) {
	t.Helper()
	groups := []struct {
		name  string
		tests []test
	}{
		{"registry", registryTests},
		{"pick", pickTests},
		{"commands", commandTests},
		{"events", eventTests},
		{"counter", counterTests},
		{"limit", limitTests},
		{"semaphore", semaphoreTests},
		{"lock", lockTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, newCoord)
				})
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T, newCoord NewFunc)
}

// attempts bounds the runs of a timing-sensitive scenario.
const attempts = 5

// retryTiming runs scenario until it reports that its timing assumptions held (for
// example "the second call came less than a TTL after the first"), at most attempts
// times, each with a fresh coordinator. A scenario returns false only after measuring
// that the machine was too slow for its timing, and before asserting anything that
// depends on it; every other check fails the test at once.
func retryTiming(t *testing.T, scenario func() bool) {
	t.Helper()
	for try := range attempts {
		if scenario() {
			return
		}
		t.Logf("attempt %d: machine too slow for the timing of this test, retrying", try+1)
	}
	t.Fatalf("timing assumptions failed %d times in a row", attempts)
}
