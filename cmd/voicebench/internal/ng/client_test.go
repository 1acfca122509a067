package ng

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// responder is a minimal ng peer: it drops the first `drop` requests and
// answers the rest with reply(request).
func responder(t *testing.T, drop int32, reply func(map[string]any) map[string]any) (string, *atomic.Int32) {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	var seen atomic.Int32
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if seen.Add(1) <= drop {
				continue
			}
			sp := bytes.IndexByte(buf[:n], ' ')
			req, err := Decode(buf[sp+1 : n])
			if err != nil {
				continue
			}
			out, _ := Append(append(bytes.Clone(buf[:sp]), ' '), reply(req.(map[string]any)))
			conn.WriteToUDP(out, from)
		}
	}()
	return conn.LocalAddr().String(), &seen
}

func TestClientDoAndRetry(t *testing.T) {
	addr, seen := responder(t, 1, func(req map[string]any) map[string]any {
		if req["command"] == "ping" {
			return map[string]any{"result": "pong"}
		}
		return map[string]any{"result": "error", "error-reason": "Unknown call-id"}
	})
	c, err := Dial(addr, Config{RetryInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()

	res, err := c.Do(context.Background(), map[string]any{"command": "ping"})
	require.NoError(t, err)
	require.Equal(t, "pong", res["result"])
	require.Equal(t, int32(2), seen.Load(), "the first request was dropped and resent")

	_, err = c.Do(context.Background(), map[string]any{"command": "delete", "call-id": "nope"})
	var ngErr *Error
	require.ErrorAs(t, err, &ngErr)
	require.Equal(t, "delete", ngErr.Command)
	require.Equal(t, "Unknown call-id", ngErr.Reason)
}

func TestClientTimeoutAndClose(t *testing.T) {
	addr, seen := responder(t, 1000, nil)
	c, err := Dial(addr, Config{RetryInterval: 10 * time.Millisecond, Attempts: 3})
	require.NoError(t, err)
	_, err = c.Do(context.Background(), map[string]any{"command": "ping"})
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, int32(3), seen.Load())

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Millisecond)
	defer cancel()
	c2, err := Dial(addr, Config{RetryInterval: time.Second})
	require.NoError(t, err)
	_, err = c2.Do(ctx, map[string]any{"command": "ping"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c2.Close())

	require.NoError(t, c.Close())
	_, err = c.Do(context.Background(), map[string]any{"command": "ping"})
	require.ErrorIs(t, err, ErrClosed)
}

func TestClientConcurrent(t *testing.T) {
	addr, _ := responder(t, 0, func(req map[string]any) map[string]any {
		return map[string]any{"result": "ok", "echo": req["call-id"]}
	})
	c, err := Dial(addr, Config{})
	require.NoError(t, err)
	defer c.Close()
	errs := make(chan error, 50)
	for i := range 50 {
		go func() {
			id := string(rune('a' + i%26))
			res, err := c.Do(context.Background(), map[string]any{"command": "query", "call-id": id})
			if err == nil && res["echo"] != id {
				err = &Error{Command: "query", Reason: "reply for another request"}
			}
			errs <- err
		}()
	}
	for range 50 {
		require.NoError(t, <-errs)
	}
}
