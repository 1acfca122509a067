package rediscoord_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/coord/coordtest"
	"github.com/voiced/voiced/storage/coord/rediscoord"
)

// redisOptions returns the options of the test Redis, skipping the test when it is
// unreachable, or failing it when CI=true.
func redisOptions(t *testing.T) *redis.Options {
	t.Helper()
	url := os.Getenv("VOICED_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	require.NoError(t, err, "VOICED_TEST_REDIS_URL")
	probe := *opts
	probe.MaxRetries = -1 // fail fast when nothing listens
	rdb := redis.NewClient(&probe)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s unreachable: %v", url, err)
		}
		t.Skipf("redis at %s unreachable (set VOICED_TEST_REDIS_URL): %v", url, err)
	}
	return opts
}

// newClient returns a client whose connections carry name (so a test can find them in
// CLIENT LIST) and deletes every key under prefix when the test ends.
func newClient(t *testing.T, opts *redis.Options, prefix, name string) *redis.Client {
	t.Helper()
	o := *opts
	o.ClientName = name
	rdb := redis.NewClient(&o)
	t.Cleanup(func() {
		ctx := context.Background()
		var keys []string
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		require.NoError(t, iter.Err())
		if len(keys) > 0 {
			require.NoError(t, rdb.Del(ctx, keys...).Err())
		}
		require.NoError(t, rdb.Close())
	})
	return rdb
}

func testPrefix() string {
	return "voicedtest:" + coord.NewToken()[:12] + ":"
}

func newCoord(t *testing.T, opts *redis.Options, cfg rediscoord.Config, name string) *rediscoord.Coord {
	t.Helper()
	c, err := rediscoord.New(cfg, nil, newClient(t, opts, cfg.Prefix, name))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

func TestRedisContract(t *testing.T) {
	opts := redisOptions(t)
	coordtest.Run(t, func(t *testing.T, cfg coord.Config) coord.Coordinator {
		return newCoord(t, opts, rediscoord.Config{Config: cfg, Prefix: testPrefix(), Poll: 100 * time.Millisecond}, "")
	})
}

func TestNewRejectsNilClient(t *testing.T) {
	_, err := rediscoord.New(rediscoord.Config{}, nil, nil)
	require.ErrorIs(t, err, coord.ErrInvalid)
}

// TestPrefixesIsolate runs two coordinators on one Redis with different prefixes, as
// two deployments would: neither sees the other's nodes, locks or events.
func TestPrefixesIsolate(t *testing.T) {
	opts := redisOptions(t)
	ctx := t.Context()
	a := newCoord(t, opts, rediscoord.Config{Prefix: testPrefix()}, "")
	b := newCoord(t, opts, rediscoord.Config{Prefix: testPrefix()}, "")

	require.NoError(t, a.Heartbeat(ctx, coord.Node{ID: "n1"}))
	nodes, err := b.Nodes(ctx)
	require.NoError(t, err)
	require.Empty(t, nodes)
	_, err = b.Send(ctx, "n1", coord.Command{Type: coord.CommandHangup})
	require.ErrorIs(t, err, coord.ErrUnknownNode)

	_, err = a.Lock(ctx, "k", time.Minute)
	require.NoError(t, err)
	_, err = b.Lock(ctx, "k", time.Minute)
	require.NoError(t, err)

	_, err = a.Publish(ctx, "s", coord.Event{Type: "t"})
	require.NoError(t, err)
	ds, err := b.Read(ctx, coord.ReadArgs{Stream: "s", Group: "g", Consumer: "c"})
	require.NoError(t, err)
	require.Empty(t, ds)
}

// TestCommandsSurviveOutage cuts the subscriber's network path to Redis, sends
// commands while it cannot reconnect, then restores it: the per-node stream must
// deliver all of them in order, where pub/sub (or resuming at "$") would drop the
// commands sent during the outage.
func TestCommandsSurviveOutage(t *testing.T) {
	opts := redisOptions(t)
	ctx := t.Context()
	cfg := rediscoord.Config{Prefix: testPrefix(), Poll: 200 * time.Millisecond}
	control := newCoord(t, opts, cfg, "")

	px := newProxy(t, opts.Addr)
	nodeOpts := *opts
	nodeOpts.Addr = px.Addr()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	node, err := rediscoord.New(cfg, log, newClient(t, &nodeOpts, cfg.Prefix, ""))
	require.NoError(t, err)
	defer func() { require.NoError(t, node.Close()) }()

	require.NoError(t, control.Heartbeat(ctx, coord.Node{ID: "media-1"}))
	sub, err := node.Commands(ctx, "media-1")
	require.NoError(t, err)
	defer func() { require.NoError(t, sub.Close()) }()
	_, err = control.Send(ctx, "media-1", coord.Command{CallID: "c0", Type: coord.CommandHangup})
	require.NoError(t, err)
	require.Equal(t, "c0", recv(t, sub).CallID)

	px.cut()
	want := []string{"c1", "c2", "c3"}
	for _, call := range want {
		_, err := control.Send(ctx, "media-1", coord.Command{CallID: call, Type: coord.CommandHangup})
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "command subscription read failed")
	}, 5*time.Second, 20*time.Millisecond, "the outage was not noticed")
	px.restore()
	for _, call := range want {
		require.Equal(t, call, recv(t, sub).CallID)
	}
	require.Contains(t, logs.String(), "command subscription resumed")
}

// syncBuffer is a bytes.Buffer safe for a logger writing while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func recv(t *testing.T, sub coord.Subscription) coord.Command {
	t.Helper()
	select {
	case c, ok := <-sub.C():
		require.True(t, ok, "subscription ended")
		return c
	case <-time.After(5 * time.Second):
		require.FailNow(t, "no command received")
		return coord.Command{}
	}
}
