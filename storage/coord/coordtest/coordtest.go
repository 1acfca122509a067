// Package coordtest is the contract suite every coord implementation passes. It checks
// behaviour through the coord interfaces only, with short TTLs and real time, so the
// same assertions hold for the in-process and the Redis implementations.
package coordtest

import (
	"testing"
	"time"

	"github.com/voiced/voiced/storage/coord"
)

// Timings of the suite, short so it runs in seconds; the margins between them absorb
// scheduling delays on a loaded machine.
const (
	// NodeTTL is the node time-to-live the suite configures.
	NodeTTL = 300 * time.Millisecond
	// Visibility is the event visibility timeout the suite configures.
	Visibility = 400 * time.Millisecond
)

// NewFunc returns a fresh, empty coordinator built from cfg, isolated from every other
// coordinator the suite creates (for Redis: its own key prefix). It registers its own
// cleanup with t.Cleanup.
type NewFunc func(t *testing.T, cfg coord.Config) coord.Coordinator

// Config returns the configuration the suite passes to NewFunc unless a test needs
// another, exported so implementation tests can reuse it.
func Config() coord.Config {
	return coord.Config{NodeTTL: NodeTTL, Visibility: Visibility}
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
