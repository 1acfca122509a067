package coordtest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
)

var registryTests = []test{
	{"heartbeat_lists_live_nodes_sorted", testHeartbeatLists},
	{"heartbeat_replaces_load", testHeartbeatReplaces},
	{"node_expires_after_ttl", testNodeExpires},
	{"leave_removes_at_once", testLeave},
	{"rejects_empty_id", testHeartbeatInvalid},
}

var pickTests = []test{
	{"no_nodes", testPickNone},
	{"single_node", testPickSingle},
	{"skips_draining", testPickSkipsDraining},
	{"skips_dead", testPickSkipsDead},
	{"scripted_draws_take_less_loaded", testPickScripted},
	{"statistics_favour_idle_never_busiest", testPickStatistics},
}

func testHeartbeatLists(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	before := time.Now()
	b := coord.Node{ID: "node-b", Addr: "10.0.0.2:5060", Calls: 7, CPU: 0.25, Draining: true}
	a := coord.Node{ID: "node-a", Addr: "10.0.0.1:5060", Calls: 3, CPU: 0.5}
	require.NoError(t, c.Heartbeat(ctx, b))
	require.NoError(t, c.Heartbeat(ctx, a))

	nodes, err := c.Nodes(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	for i, want := range []coord.Node{a, b} {
		got := nodes[i]
		// Seen is stamped on the registry's clock (the Redis server's for rediscoord):
		// allow skew with the test's clock, but it must be set.
		require.WithinDuration(t, before, got.Seen, 5*time.Second, "node %s seen", want.ID)
		got.Seen = time.Time{}
		require.Equal(t, want, got)
	}
}

func testHeartbeatReplaces(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "n", Addr: "a:1", Calls: 1, CPU: 0.1}))
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "n", Addr: "a:1", Calls: 5, CPU: 0.3, Draining: true}))
	nodes, err := c.Nodes(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, 5, nodes[0].Calls)
	require.InDelta(t, 0.3, nodes[0].CPU, 1e-9)
	require.True(t, nodes[0].Draining)
}

// testNodeExpires lets one node go silent while another keeps beating: the silent one
// must disappear no sooner than NodeTTL after its heartbeat and within a few TTLs,
// while the other is listed throughout.
func testNodeExpires(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, Config())
		ctx := t.Context()
		start := time.Now() // before the heartbeat, so "seen" is not earlier than start
		require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "silent"}))
		require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "beating"}))
		nodes, err := c.Nodes(ctx)
		require.NoError(t, err)
		if time.Since(start) >= NodeTTL {
			return false
		}
		require.Equal(t, []string{"beating", "silent"}, ids(nodes))

		deadline := start.Add(5 * NodeTTL)
		for {
			beat := time.Now()
			require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "beating"}))
			nodes, err := c.Nodes(ctx)
			require.NoError(t, err)
			if time.Since(beat) >= NodeTTL {
				return false // "beating" may legitimately have expired
			}
			elapsed := time.Since(start)
			if len(nodes) == 1 {
				require.Equal(t, "beating", nodes[0].ID)
				require.GreaterOrEqual(t, elapsed, NodeTTL, "node expired before its TTL")
				return true
			}
			require.Equal(t, []string{"beating", "silent"}, ids(nodes))
			require.True(t, time.Now().Before(deadline), "silent node still live after %v", elapsed)
			time.Sleep(NodeTTL / 10)
		}
	})
}

func testLeave(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "a"}))
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "b"}))
	require.NoError(t, c.Leave(ctx, "a"))
	require.NoError(t, c.Leave(ctx, "never-seen"))
	nodes, err := c.Nodes(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, ids(nodes))
}

func testHeartbeatInvalid(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	require.ErrorIs(t, c.Heartbeat(t.Context(), coord.Node{Addr: "x:1"}), coord.ErrInvalid)
}

func testPickNone(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	_, err := c.Pick(t.Context())
	require.ErrorIs(t, err, coord.ErrNoNodes)
}

func testPickSingle(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "only", Addr: "h:1", Calls: 99, CPU: 0.99}))
	for range 5 {
		n, err := c.Pick(ctx)
		require.NoError(t, err)
		require.Equal(t, "only", n.ID)
		require.Equal(t, "h:1", n.Addr)
	}
}

func testPickSkipsDraining(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "idle-draining", Draining: true}))
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "busy", Calls: 500, CPU: 0.8}))
	for range 20 {
		n, err := c.Pick(ctx)
		require.NoError(t, err)
		require.Equal(t, "busy", n.ID)
	}
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "busy", Calls: 500, Draining: true}))
	_, err := c.Pick(ctx)
	require.ErrorIs(t, err, coord.ErrNoNodes)
}

func testPickSkipsDead(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, Config())
		ctx := t.Context()
		require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "idle-dead"}))
		time.Sleep(NodeTTL + NodeTTL/2)
		for range 5 {
			beat := time.Now()
			require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "fresh", Calls: 100}))
			n, err := c.Pick(ctx)
			if time.Since(beat) >= NodeTTL {
				return false
			}
			require.NoError(t, err)
			require.Equal(t, "fresh", n.ID)
		}
		return true
	})
}

// scriptedIntn returns the values of draws in order and records every n it was asked
// for; it fails the test when the script runs out.
type scriptedIntn struct {
	t     *testing.T
	mu    sync.Mutex
	draws []int
	asked []int
}

func (s *scriptedIntn) Intn(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, n)
	if len(s.draws) == 0 {
		s.t.Errorf("Intn(%d) called after the script ended", n)
		return 0
	}
	v := s.draws[0]
	s.draws = s.draws[1:]
	return v
}

func testPickScripted(t *testing.T, newCoord NewFunc) {
	// Live candidates sorted by ID: 0 a (10 calls), 1 b (0 calls), 2 c (5 calls),
	// 3 d (0 calls but saturated CPU), 4 e (10 calls, lower CPU than a).
	// Each Pick draws i in [0,5) then j in [0,4), j skipping i.
	script := &scriptedIntn{t: t, draws: []int{
		0, 0, // a vs b → b (fewer calls)
		0, 1, // a vs c → c
		2, 0, // c vs a → c, whichever order
		2, 1, // c vs b → b
		3, 0, // d vs a → a: a saturated node loses despite fewer calls
		4, 0, // e vs a → e: equal calls, lower CPU
		0, 3, // a vs e → e
	}}
	cfg := stable()
	cfg.Intn = script.Intn
	cfg.HotCPU = 0.9
	c := newCoord(t, cfg)
	ctx := t.Context()
	for _, n := range []coord.Node{
		{ID: "a", Calls: 10, CPU: 0.5},
		{ID: "b", Calls: 0, CPU: 0.5},
		{ID: "c", Calls: 5, CPU: 0.5},
		{ID: "d", Calls: 0, CPU: 0.95},
		{ID: "e", Calls: 10, CPU: 0.2},
		{ID: "f-draining", Calls: 0, Draining: true},
	} {
		require.NoError(t, c.Heartbeat(ctx, n))
	}
	var got []string
	for range 7 {
		n, err := c.Pick(ctx)
		require.NoError(t, err)
		got = append(got, n.ID)
	}
	require.Equal(t, []string{"b", "c", "c", "b", "a", "e", "e"}, got)
	require.Equal(t, []int{5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4}, script.asked)
}

// testPickStatistics uses real randomness over three nodes loaded 0, 50 and 100 calls.
// With two distinct draws the busiest node always meets a less loaded one, so it is
// never picked; the idle node wins both pairs it is in (2/3 of draws) and the middle
// one the remaining third.
func testPickStatistics(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	for _, n := range []coord.Node{{ID: "idle"}, {ID: "mid", Calls: 50}, {ID: "busy", Calls: 100}} {
		require.NoError(t, c.Heartbeat(ctx, n))
	}
	const picks = 600
	count := map[string]int{}
	for range picks {
		n, err := c.Pick(ctx)
		require.NoError(t, err)
		count[n.ID]++
	}
	require.Zero(t, count["busy"], "busiest node picked: %v", count)
	// Expected 400 and 200, standard deviation 11.5: the bounds are over 5 sigma away.
	require.InDelta(t, 400, count["idle"], 60, "%v", count)
	require.InDelta(t, 200, count["mid"], 60, "%v", count)
}

func ids(nodes []coord.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}
