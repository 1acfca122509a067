package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLocalSweepDropsExpired checks that keys never touched again do not accumulate:
// the first call after sweepEvery drops every expired entry and keeps the live ones.
func TestLocalSweepDropsExpired(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLocal(Config{Now: func() time.Time { return now }})
	defer l.Close()
	ctx := t.Context()
	for _, err := range []error{
		l.Heartbeat(ctx, Node{ID: "dead"}),
		func() error { _, err := l.Incr(ctx, "short", 1, time.Second); return err }(),
		func() error { _, err := l.Incr(ctx, "forever", 1, 0); return err }(),
		func() error { _, err := l.Allow(ctx, "rl", Rate{N: 1, Per: time.Second}); return err }(),
		func() error { _, err := l.Acquire(ctx, "sem", 2, time.Second); return err }(),
		func() error { _, err := l.Lock(ctx, "lk", time.Second); return err }(),
	} {
		require.NoError(t, err)
	}
	now = now.Add(sweepEvery - time.Nanosecond)
	_, err := l.Lock(ctx, "held", time.Hour)
	require.NoError(t, err)
	require.Len(t, l.counters, 2, "no sweep before sweepEvery")

	now = now.Add(time.Nanosecond)
	require.NoError(t, l.Heartbeat(ctx, Node{ID: "live"}))
	require.Len(t, l.nodes, 1)
	require.Contains(t, l.nodes, "live")
	require.Equal(t, map[string]localCounter{"forever": {v: 1}}, l.counters)
	require.Empty(t, l.logs)
	require.Empty(t, l.sems)
	require.Len(t, l.locks, 1)
	require.Contains(t, l.locks, "held")
}
