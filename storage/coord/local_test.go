package coord_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/coord/coordtest"
)

func TestLocalContract(t *testing.T) {
	coordtest.Run(t, func(t *testing.T, cfg coord.Config) coord.Coordinator {
		l := coord.NewLocal(cfg)
		t.Cleanup(func() { require.NoError(t, l.Close()) })
		return l
	})
}

// fakeClock is a settable clock for the Local's expiry decisions.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFakeLocal(t *testing.T) (*coord.Local, *fakeClock) {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	l := coord.NewLocal(coord.Config{Now: clock.Now})
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l, clock
}

// TestLocalNodeTTLBoundary checks the default TTL to the nanosecond: live at
// 6 s - 1 ns of silence, dead at 6 s, and Seen is the heartbeat time.
func TestLocalNodeTTLBoundary(t *testing.T) {
	l, clock := newFakeLocal(t)
	ctx := t.Context()
	beat := clock.Now()
	require.NoError(t, l.Heartbeat(ctx, coord.Node{ID: "n", Seen: beat.Add(time.Hour)}))
	clock.Advance(coord.DefaultNodeTTL - 1)
	nodes, err := l.Nodes(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, beat, nodes[0].Seen, "Seen is stamped by the registry")
	_, err = l.Send(ctx, "n", coord.Command{Type: coord.CommandHangup})
	require.NoError(t, err)

	clock.Advance(1)
	nodes, err = l.Nodes(ctx)
	require.NoError(t, err)
	require.Empty(t, nodes)
	_, err = l.Pick(ctx)
	require.ErrorIs(t, err, coord.ErrNoNodes)
	_, err = l.Send(ctx, "n", coord.Command{Type: coord.CommandHangup})
	require.ErrorIs(t, err, coord.ErrUnknownNode)
}

func TestLocalVisibilityBoundary(t *testing.T) {
	l, clock := newFakeLocal(t)
	ctx := t.Context()
	_, err := l.Publish(ctx, "s", coord.Event{ID: "e", Type: "t"})
	require.NoError(t, err)
	args := func(consumer string) coord.ReadArgs {
		return coord.ReadArgs{Stream: "s", Group: "g", Consumer: consumer, Max: 10}
	}
	ds, err := l.Read(ctx, args("a"))
	require.NoError(t, err)
	require.Len(t, ds, 1)

	for i, step := range []struct {
		advance time.Duration
		want    int // deliveries count, 0 for none
	}{
		{coord.DefaultVisibility - 1, 0},
		{1, 2},
		{coord.DefaultVisibility - 1, 0}, // redelivery restarts the timeout
		{1, 3},
	} {
		clock.Advance(step.advance)
		ds, err := l.Read(ctx, args("b"))
		require.NoError(t, err)
		if step.want == 0 {
			require.Empty(t, ds, "step %d", i)
			continue
		}
		require.Len(t, ds, 1, "step %d", i)
		require.Equal(t, "e", ds[0].ID)
		require.Equal(t, step.want, ds[0].Deliveries)
	}
}

// TestLocalSlidingWindow checks the limiter against a fixed clock: N=3 per minute with
// actions at 0 s, 20 s and 40 s; at 59 s the window is full (a fixed window starting
// at 0 s would be too), at 60 s exactly one slot frees, the one of the action at 0 s.
func TestLocalSlidingWindow(t *testing.T) {
	l, clock := newFakeLocal(t)
	ctx := t.Context()
	rate := coord.Rate{N: 3, Per: time.Minute}
	allow := func() coord.Decision {
		d, err := l.Allow(ctx, "k", rate)
		require.NoError(t, err)
		return d
	}
	require.True(t, allow().Allowed)
	clock.Advance(20 * time.Second)
	require.True(t, allow().Allowed)
	clock.Advance(20 * time.Second)
	require.True(t, allow().Allowed)
	clock.Advance(19 * time.Second)
	require.Equal(t, coord.Decision{RetryAfter: time.Second}, allow())
	clock.Advance(time.Second)
	require.Equal(t, coord.Decision{Allowed: true}, allow())
	require.Equal(t, coord.Decision{RetryAfter: 20 * time.Second}, allow())
}

func TestLocalClose(t *testing.T) {
	l := coord.NewLocal(coord.Config{})
	ctx := t.Context()
	require.NoError(t, l.Heartbeat(ctx, coord.Node{ID: "n"}))
	sub, err := l.Commands(ctx, "n")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := l.Read(ctx, coord.ReadArgs{Stream: "s", Group: "g", Consumer: "c", Wait: time.Minute})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the read block
	require.NoError(t, l.Close())
	_, ok := <-sub.C()
	require.False(t, ok, "Close ended the subscription")
	require.NoError(t, sub.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, coord.ErrClosed)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "blocked read not woken by Close")
	}
	require.ErrorIs(t, l.Heartbeat(ctx, coord.Node{ID: "n"}), coord.ErrClosed)
	require.NoError(t, l.Close(), "Close is idempotent")
}
