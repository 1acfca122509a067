package realtime

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/agent"
)

// Every close the server starts carries its reason: an error event with a
// code, then a close frame with a status and a reason (docs/decisions.md,
// "Realtime closes").

// requireClosedFor asserts c's server close was status with a reason,
// after an error event of code errCode.
func requireClosedFor(t *testing.T, c *client, status ws.StatusCode, reason, errCode string) {
	t.Helper()
	ce := c.waitClosed()
	require.Equal(t, status, ce.Code, "close status (reason %q)", ce.Reason)
	require.Equal(t, reason, ce.Reason)
	er := c.find("error").obj("error")
	require.Equal(t, errCode, er["code"], "error event %v", er)
	require.NotEmpty(t, er["message"])
	require.NotEmpty(t, er["type"])
}

func TestCloseIdleTimeout(t *testing.T) {
	e := newEnv(t, Config{IdleTimeout: 300 * time.Millisecond, PingInterval: 100 * time.Millisecond})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.next("session.created")
	requireClosedFor(t, c, ws.StatusNormalClosure, "idle timeout", "idle_timeout")
}

func TestCloseStartTimeout(t *testing.T) {
	e := newEnv(t, Config{StartTimeout: 200 * time.Millisecond})
	c, _ := e.dial(t, "", bearer(goodKey))
	requireClosedFor(t, c, ws.StatusPolicyViolation, "no session.update received", "session_update_timeout")
}

func TestCloseMessageTooLarge(t *testing.T) {
	e := newEnv(t, Config{MaxMessageBytes: 4096})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.next("session.created")
	c.send(map[string]any{"type": "input_audio_buffer.append", "audio": strings.Repeat("A", 8000)})
	requireClosedFor(t, c, ws.StatusMessageTooBig, "message too large", "message_too_large")
}

func TestCloseProtocolError(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.next("session.created")
	// An unmasked client frame breaks RFC 6455.
	c.wmu.Lock()
	require.NoError(t, ws.WriteFrame(c.nc, ws.NewTextFrame([]byte(`{"type":"response.create"}`))))
	c.wmu.Unlock()
	requireClosedFor(t, c, ws.StatusProtocolError, "protocol error", "protocol_error")
}

func TestCloseAgentEndedCall(t *testing.T) {
	e := newEnv(t, Config{})
	e.calls.agents[7] = Agent{Prompt: "p", Voice: "v", Engine: agent.Config{MaxDuration: 300 * time.Millisecond}}
	c, _ := e.dial(t, "agent_id=7", bearer(goodKey))
	requireClosedFor(t, c, ws.StatusNormalClosure, "timeout", "timeout")
	require.Equal(t, "session_ended", c.find("error").obj("error")["type"])
	require.Equal(t, "timeout", e.calls.waitFinished(t, 101).Reason)
}

func TestCloseInsufficientBalance(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(poorKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	requireClosedFor(t, c, ws.StatusPolicyViolation, "insufficient balance", "insufficient_balance")
	n := 0
	for _, ev := range c.all() {
		if ev.Type == "error" {
			n++
		}
	}
	require.Equal(t, 1, n, "one error event: %v", c.types())
}

func TestCloseServerShutdown(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	c.next("session.updated")
	go func() { _ = e.srv.Close(t.Context()) }()
	requireClosedFor(t, c, ws.StatusGoingAway, "server shutting down", "server_shutting_down")
}

func TestCloseNodeDrain(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	c.next("session.updated")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go func() { _ = e.srv.Drain(ctx) }()
	requireClosedFor(t, c, ws.StatusGoingAway, "node shutting down", "server_shutting_down")
}

// rawClient is a WebSocket client that reads only when told to, and then
// as slowly as told: it answers no pings.
type rawClient struct {
	nc     net.Conn
	r      io.Reader
	mu     sync.Mutex
	events []map[string]any
	close  *wsutil.ClosedError
	done   chan struct{}
}

// dialRaw connects with a small receive buffer, so the server's writes
// back up soon after the client stops reading.
func dialRaw(t *testing.T, e *env) *rawClient {
	t.Helper()
	nd := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	// The server's side of the socket gets a small send buffer too: its
	// own HTTP server, serving the same realtime server.
	mux := http.NewServeMux()
	mux.Handle("/v1/realtime", e.srv)
	hs := httptest.NewUnstartedServer(mux)
	hs.Config.ConnState = func(nc net.Conn, s http.ConnState) {
		if tc, ok := nc.(*net.TCPConn); ok && s == http.StateNew {
			_ = tc.SetWriteBuffer(4096)
		}
	}
	hs.Start()
	t.Cleanup(hs.Close)
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(bearer(goodKey)), NetDial: nd.DialContext}
	nc, br, _, err := d.Dial(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http")+"/v1/realtime")
	require.NoError(t, err)
	c := &rawClient{nc: nc, r: nc, done: make(chan struct{})}
	if br != nil {
		c.r = io.MultiReader(br, nc)
	}
	t.Cleanup(func() { nc.Close() })
	return c
}

func (c *rawClient) send(t *testing.T, v any) {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, wsutil.WriteClientMessage(c.nc, ws.OpText, b))
}

// read reads frames until the server's close or an error, at most rate
// bytes a second (0: as fast as they come).
func (c *rawClient) read(rate int) {
	defer close(c.done)
	r := c.r
	if rate > 0 {
		r = &throttled{r: r, rate: rate}
	}
	br := bufio.NewReaderSize(r, 512)
	for {
		f, err := ws.ReadFrame(br)
		if err != nil {
			return
		}
		switch f.Header.OpCode {
		case ws.OpText:
			var m map[string]any
			if json.Unmarshal(f.Payload, &m) == nil {
				c.mu.Lock()
				c.events = append(c.events, m)
				c.mu.Unlock()
			}
		case ws.OpClose:
			code, reason := ws.ParseCloseFrameData(f.Payload)
			c.mu.Lock()
			c.close = &wsutil.ClosedError{Code: code, Reason: reason}
			c.mu.Unlock()
			return
		}
	}
}

// requireClosedFor is requireClosedFor's for a raw client.
func (c *rawClient) requireClosedFor(t *testing.T, within time.Duration, status ws.StatusCode, reason, errCode string) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(within):
		t.Fatalf("not closed within %v", within)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotNil(t, c.close, "the socket ended without a close frame")
	require.Equal(t, status, c.close.Code)
	require.Equal(t, reason, c.close.Reason)
	for _, ev := range c.events {
		if ev["type"] == "error" {
			er, _ := ev["error"].(map[string]any)
			require.Equal(t, errCode, er["code"], "error event %v", er)
			return
		}
	}
	t.Fatalf("no error event before the close")
}

// throttled reads at most rate bytes a second, in small reads.
type throttled struct {
	r    io.Reader
	rate int
}

func (t *throttled) Read(p []byte) (int, error) {
	p = p[:min(len(p), 256)]
	n, err := t.r.Read(p)
	time.Sleep(time.Duration(n) * time.Second / time.Duration(t.rate))
	return n, err
}

// longReply has the agent talk for about 20 s (the echo model repeats
// the user's words; the fake TTS speaks 100 ms a word).
func longReply(t *testing.T, c *rawClient) {
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	c.send(t, userText(strings.Repeat("word ", 200)))
	c.send(t, map[string]any{"type": "response.create"})
}

// TestClosePingTimeout: a client that sends nothing, not even the pongs of
// the server's pings, is closed at the read timeout (2 pings + 5 s) with
// its reason.
func TestClosePingTimeout(t *testing.T) {
	e := newEnv(t, Config{PingInterval: 100 * time.Millisecond})
	c := dialRaw(t, e)
	time.Sleep(2*100*time.Millisecond + 5*time.Second + 300*time.Millisecond)
	go c.read(0)
	c.requireClosedFor(t, 5*time.Second, ws.StatusPolicyViolation, "ping timeout", "ping_timeout")
}

// TestCloseSlowConsumer: a client reading the agent's audio slower than
// real time is closed once a second of it waits, and still gets the
// reason after what it had not read.
func TestCloseSlowConsumer(t *testing.T) {
	e := newEnv(t, Config{})
	c := dialRaw(t, e)
	longReply(t, c)
	go c.read(20 << 10) // the deltas come at ~70 kB/s
	c.requireClosedFor(t, 20*time.Second, ws.StatusPolicyViolation, "slow consumer", "slow_consumer")
}

// TestCloseWriteTimeout: a client that stops reading is closed when a write
// to it blocks for the write timeout; if it reads again within a few
// seconds it gets the reason.
func TestCloseWriteTimeout(t *testing.T) {
	e := newEnv(t, Config{WriteTimeout: 300 * time.Millisecond})
	c := dialRaw(t, e)
	longReply(t, c)
	time.Sleep(3 * time.Second)
	go c.read(0)
	c.requireClosedFor(t, 10*time.Second, ws.StatusPolicyViolation, "write timeout", "write_timeout")
}
