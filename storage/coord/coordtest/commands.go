package coordtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
)

var commandTests = []test{
	{"delivered_in_order_to_addressed_node_only", testCommandsAddressed},
	{"only_commands_sent_after_subscribing", testCommandsAfterSubscribe},
	{"unknown_dead_or_left_node_rejected", testCommandsUnknownNode},
	{"close_and_cancel_end_subscription", testCommandsClose},
}

// recvTimeout bounds how long a test waits for a command that must arrive.
const recvTimeout = 3 * time.Second

func recv(t *testing.T, sub coord.Subscription) coord.Command {
	t.Helper()
	select {
	case c, ok := <-sub.C():
		require.True(t, ok, "subscription ended")
		return c
	case <-time.After(recvTimeout):
		require.FailNow(t, "no command received")
		return coord.Command{}
	}
}

func requireSilent(t *testing.T, sub coord.Subscription, d time.Duration) {
	t.Helper()
	select {
	case c, ok := <-sub.C():
		require.False(t, ok, "unexpected command %+v", c)
		require.FailNow(t, "subscription ended")
	case <-time.After(d):
	}
}

func subscribe(t *testing.T, c coord.Coordinator, node string) coord.Subscription {
	t.Helper()
	sub, err := c.Commands(t.Context(), node)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sub.Close()) })
	return sub
}

func testCommandsAddressed(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "a"}))
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "b"}))
	subA := subscribe(t, c, "a")
	subB := subscribe(t, c, "b")

	sent := []coord.Command{
		{CallID: "call-1", Type: coord.CommandHangup},
		{ID: "cmd-2", CallID: "call-2", Type: coord.CommandWhisper, Data: []byte("say: hold on\x00\xff")},
		{CallID: "call-1", Type: coord.CommandTransfer, Data: []byte("sip:desk@example.com")},
	}
	for i := range sent {
		id, err := c.Send(ctx, "a", sent[i])
		require.NoError(t, err)
		require.NotEmpty(t, id)
		if sent[i].ID != "" {
			require.Equal(t, sent[i].ID, id, "caller-chosen id kept")
		}
		sent[i].ID = id
	}
	toB := coord.Command{CallID: "call-9", Type: coord.CommandListen, Data: []byte("ws://supervisor")}
	idB, err := c.Send(ctx, "b", toB)
	require.NoError(t, err)
	toB.ID = idB

	for _, want := range sent {
		require.Equal(t, want, recv(t, subA))
	}
	require.Equal(t, toB, recv(t, subB), "b's first command is its own, not one of a's")
	requireSilent(t, subA, 100*time.Millisecond)
	requireSilent(t, subB, 100*time.Millisecond)
}

func testCommandsAfterSubscribe(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "a"}))
	_, err := c.Send(ctx, "a", coord.Command{CallID: "before", Type: coord.CommandHangup})
	require.NoError(t, err)
	sub := subscribe(t, c, "a")
	_, err = c.Send(ctx, "a", coord.Command{CallID: "after", Type: coord.CommandHangup})
	require.NoError(t, err)
	require.Equal(t, "after", recv(t, sub).CallID)
}

func testCommandsUnknownNode(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, Config())
		ctx := t.Context()
		cmd := coord.Command{CallID: "x", Type: coord.CommandHangup}
		_, err := c.Send(ctx, "ghost", cmd)
		require.ErrorIs(t, err, coord.ErrUnknownNode)
		_, err = c.Send(ctx, "", cmd)
		require.ErrorIs(t, err, coord.ErrInvalid)

		beat := time.Now()
		require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "leaving"}))
		require.NoError(t, c.Heartbeat(ctx, coord.Node{ID: "dying"}))
		_, err = c.Send(ctx, "leaving", cmd)
		if time.Since(beat) >= NodeTTL {
			return false
		}
		require.NoError(t, err)
		require.NoError(t, c.Leave(ctx, "leaving"))
		_, err = c.Send(ctx, "leaving", cmd)
		require.ErrorIs(t, err, coord.ErrUnknownNode)

		time.Sleep(time.Until(beat.Add(NodeTTL + NodeTTL/2)))
		_, err = c.Send(ctx, "dying", cmd)
		require.ErrorIs(t, err, coord.ErrUnknownNode)
		return true
	})
}

func testCommandsClose(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	require.NoError(t, c.Heartbeat(t.Context(), coord.Node{ID: "a"}))

	sub, err := c.Commands(t.Context(), "a")
	require.NoError(t, err)
	require.NoError(t, sub.Close())
	_, ok := <-sub.C() // Close waited for the goroutine, which closed the channel
	require.False(t, ok)
	require.NoError(t, sub.Close(), "Close is idempotent")

	ctx, cancel := context.WithCancel(t.Context())
	sub, err = c.Commands(ctx, "a")
	require.NoError(t, err)
	cancel()
	select {
	case _, ok := <-sub.C():
		require.False(t, ok)
	case <-time.After(recvTimeout):
		require.FailNow(t, "cancelled subscription still open")
	}
	require.NoError(t, sub.Close())
}
