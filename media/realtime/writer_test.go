package realtime

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/agent"
)

func TestOutQueueOrderAndSlowClients(t *testing.T) {
	q := newOutQueue(100, 4, 1)
	p := &agent.Playout{ResponseID: "r"}
	q.push(outJSON, []byte("a"))
	q.pushAudio([]int16{1, 2, 3, 4}, p)
	q.push(outJSON, []byte("b"))
	it, ok, slow := q.pop()
	require.True(t, ok)
	require.False(t, slow)
	require.Equal(t, "a", string(it.data))
	it, _, _ = q.pop()
	require.Equal(t, uint8(outAudio), it.kind)
	require.Equal(t, []int16{1, 2, 3, 4}, q.frames[it.slot])
	require.Same(t, p, it.p)
	q.release(it.slot)
	it, _, _ = q.pop()
	require.Equal(t, "b", string(it.data))
	_, ok, _ = q.pop()
	require.False(t, ok)

	// Events beyond the byte budget mark the client slow.
	q.push(outJSON, make([]byte, 101))
	_, _, slow = q.pop()
	require.True(t, slow)

	// So does a second of unwritten audio.
	q = newOutQueue(1<<20, 4, 1)
	for range audioFrames {
		q.pushAudio(make([]int16, 4), p)
	}
	_, _, slow = q.pop()
	require.False(t, slow)
	q.pushAudio(make([]int16, 4), p)
	q.pushAudio(make([]int16, 4), p)
	_, _, slow = q.pop()
	require.True(t, slow)
}

func TestOutQueueDeltasOfSeveralFrames(t *testing.T) {
	q := newOutQueue(1<<20, 2, 3)
	p, p2 := &agent.Playout{ResponseID: "r"}, &agent.Playout{ResponseID: "r2"}
	frame := func(v int16) []int16 { return []int16{v, v} }
	pending := func() bool {
		select {
		case <-q.signal:
			return true
		default:
			return false
		}
	}
	// A slot is ready to send when it fills, and not before.
	require.False(t, q.pushAudio(frame(1), p))
	require.False(t, q.pushAudio(frame(2), p))
	require.False(t, q.waiting())
	_, ok, _ := q.pop()
	require.False(t, ok, "a slot that may grow stays queued")
	require.True(t, q.pushAudio(frame(3), p))
	require.True(t, q.waiting())
	it, ok, _ := q.pop()
	require.True(t, ok)
	require.Equal(t, 3, it.n)
	require.Equal(t, []int16{1, 1, 2, 2, 3, 3}, q.frames[it.slot])
	q.release(it.slot)

	// An event queued behind a part-filled slot sends it first (a
	// barge-in's speech_started follows the audio already played).
	q.pushAudio(frame(4), p)
	q.push(outJSON, []byte("speech_started"))
	require.True(t, pending())
	it, _, _ = q.pop()
	require.Equal(t, 1, it.n)
	require.Equal(t, []int16{4, 4}, q.frames[it.slot][:it.n*2])
	q.release(it.slot)
	it, _, _ = q.pop()
	require.Equal(t, "speech_started", string(it.data))
	// A frame after the event starts a new slot.
	q.pushAudio(frame(5), p)
	_, ok, _ = q.pop()
	require.False(t, ok)

	// The audio stopping seals the slot.
	require.False(t, q.pushAudio(frame(6), p))
	q.seal()
	require.True(t, q.waiting())
	it, _, _ = q.pop()
	require.Equal(t, 2, it.n)
	require.Equal(t, []int16{5, 5, 6, 6}, q.frames[it.slot][:it.n*2])
	q.release(it.slot)
	q.pushAudio(frame(7), p)
	_, ok, _ = q.pop()
	require.False(t, ok, "a new slot after the seal")

	// Another playout's frame starts its own slot and releases the last.
	require.True(t, q.pushAudio(frame(8), p2))
	it, _, _ = q.pop()
	require.Same(t, p, it.p)
	require.Equal(t, 1, it.n)
	q.release(it.slot)
	_, ok, _ = q.pop()
	require.False(t, ok)

	// A second of audio still marks a client slow.
	q = newOutQueue(1<<20, 2, 3)
	for range audioFrames + 3 {
		q.pushAudio(frame(0), p)
	}
	_, _, slow := q.pop()
	require.True(t, slow)
}

func TestOutQueuePushAudioAllocatesNothing(t *testing.T) {
	q := newOutQueue(1<<20, 480, 1)
	p := &agent.Playout{}
	frame := make([]int16, 480)
	allocs := testing.AllocsPerRun(200, func() {
		q.pushAudio(frame, p)
		it, _, _ := q.pop()
		q.release(it.slot)
	})
	require.Zero(t, allocs)
}

func TestAudioPathsAllocateNothing(t *testing.T) {
	// The receive path (an append event through base64, PCM, resampling
	// and the engine) and the send path (a frame to a delta event).
	sess, err := agent.New(agent.Config{Loopback: true, OutputRate: 24000, TurnDetection: &agent.TurnDetection{}}, nil, agent.Deps{}, nopSink{})
	require.NoError(t, err)
	defer sess.Close()
	c := &conn{sess: sess, enc: &encoder{tag: "x"}, set: defaultSettings(), live: true}
	c.set.out = format{codecPCM, 24000}
	require.NoError(t, c.in.init(format{codecPCM, 24000}))
	defer c.in.close()
	raw := make([]byte, 960*5) // 100 ms at 24 kHz
	msg := []byte(`{"type":"input_audio_buffer.append","audio":"` + base64.StdEncoding.EncodeToString(raw) + `"}`)
	c.handleText(msg) // grow the buffers
	allocs := testing.AllocsPerRun(100, func() { c.handleText(msg) })
	require.Zero(t, allocs, "receive path")

	p := &agent.Playout{ResponseID: "resp_1", ItemID: "item_1"}
	frame := make([]int16, 480)
	var payload, scratch []byte
	payload = c.encodeAudio(payload[:0], frame)
	scratch = c.enc.appendAudioDelta(scratch[:0], p, payload)
	allocs = testing.AllocsPerRun(100, func() {
		payload = c.encodeAudio(payload[:0], frame)
		scratch = c.enc.appendAudioDelta(scratch[:0], p, payload)
	})
	require.Zero(t, allocs, "send path")
	var ev map[string]any
	require.NoError(t, json.Unmarshal(scratch, &ev))
	require.Equal(t, "response.output_audio.delta", ev["type"])
	require.Equal(t, "item_1", ev["item_id"])
}

type nopSink struct{}

func (nopSink) Event(agent.Event) {}

func TestAppendFrameHeaders(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 127, 65535, 65536, 70000} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		b := appendFrame([]byte("x"), ws.OpBinary, payload)[1:]
		f, err := ws.ReadFrame(bytes.NewReader(b))
		require.NoError(t, err, "n=%d", n)
		require.True(t, f.Header.Fin)
		require.False(t, f.Header.Masked)
		require.Equal(t, ws.OpBinary, f.Header.OpCode)
		require.Equal(t, n, len(f.Payload), "n=%d", n)
		require.True(t, bytes.Equal(payload, f.Payload), "n=%d", n)
	}
}

// senderPair is a conn whose socket is one end of a real loopback TCP
// connection, with its writer goroutine running; the other end is
// returned for reading.
func senderPair(t *testing.T) (*conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			accepted <- nc
		}
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server := <-accepted
	srv := &Server{cfg: Config{PingInterval: time.Hour, WriteTimeout: 10 * time.Second, MaxQueuedBytes: 64 << 20, DeltaFrames: 1}, log: slog.New(slog.DiscardHandler)}
	set := defaultSettings()
	set.out = format{codecPCM, 24000}
	c := newConn(srv, server, nil, 1, set, false)
	require.NotNil(t, c.out.raw, "a TCP socket gets the pacer's non-blocking writes")
	c.wg.Add(1)
	go c.writer()
	t.Cleanup(func() {
		close(c.done)
		client.Close()
		server.Close()
		c.wg.Wait()
	})
	return c, client
}

// TestSendNowWritesAtTheTick checks the pacer's send: a delta (and an
// event queued before it) reach the socket from sendNow itself, in order,
// without the writer goroutine.
func TestSendNowWritesAtTheTick(t *testing.T) {
	c, client := senderPair(t)
	// Hold the writer's side: whatever arrives was written by sendNow.
	c.q.mu.Lock()
	c.q.items = append(c.q.items, outItem{kind: outJSON, data: []byte(`{"type":"x"}`)})
	c.q.mu.Unlock()
	p := &agent.Playout{ResponseID: "resp_1", ItemID: "item_1"}
	frame := make([]int16, 480)
	for i := range frame {
		frame[i] = int16(i)
	}
	require.True(t, c.q.pushAudio(frame, p))
	c.sendNow()
	require.False(t, c.q.waiting())
	c.out.mu.Lock()
	require.Empty(t, c.out.pend[c.out.off:], "the kernel took it all")
	c.out.mu.Unlock()

	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := ws.ReadFrame(client)
	require.NoError(t, err)
	require.Equal(t, `{"type":"x"}`, string(f.Payload))
	f, err = ws.ReadFrame(client)
	require.NoError(t, err)
	var ev struct {
		Type  string `json:"type"`
		Delta []byte `json:"delta"`
	}
	require.NoError(t, json.Unmarshal(f.Payload, &ev))
	require.Equal(t, "response.output_audio.delta", ev.Type)
	require.Len(t, ev.Delta, 960)
	require.Equal(t, byte(1), ev.Delta[2])
}

// stalledPair is senderPair with socket buffers small enough for a client
// that stops reading to back the socket up within a few hundred deltas,
// and a playout and a 24 kHz frame to send.
func stalledPair(t *testing.T) (*conn, net.Conn, *agent.Playout, []int16) {
	c, client := senderPair(t)
	require.NoError(t, client.(*net.TCPConn).SetReadBuffer(128<<10))
	require.NoError(t, c.nc.(*net.TCPConn).SetWriteBuffer(128<<10))
	return c, client, &agent.Playout{ResponseID: "resp_1", ItemID: "item_1"}, make([]int16, 480)
}

// TestSendNowNeverBlocks fills the socket of a client that does not read:
// sendNow returns at once every tick, and once the client reads, the
// writer goroutine delivers everything, whole frames in order.
func TestSendNowNeverBlocks(t *testing.T) {
	c, client, p, frame := stalledPair(t)
	const n = 40 * audioFrames // far more than the socket buffers hold
	var slowest time.Duration
	sent := 0
	for i := range n {
		frame[0] = int16(i)
		c.q.mu.Lock()
		full := len(c.q.free) == 0
		c.q.mu.Unlock()
		if full {
			break // the writer is stuck behind the client: the queue is full
		}
		c.q.pushAudio(frame, p)
		t0 := time.Now()
		c.sendNow()
		slowest = max(slowest, time.Since(t0))
		sent++
	}
	require.Less(t, slowest, 50*time.Millisecond, "sendNow waited for the client")
	c.out.mu.Lock()
	stuck := len(c.out.pend) > c.out.off
	c.out.mu.Unlock()
	require.True(t, stuck || sent < n, "the client's socket filled")
	c.out.mu.Lock()
	require.Less(t, len(c.out.pend), 2*audioFrames*1500, "a backed-up socket leaves the audio queued (where a slow client is found)")
	c.out.mu.Unlock()

	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	var ev struct {
		Delta []byte `json:"delta"`
	}
	for i := range sent {
		f, err := ws.ReadFrame(client)
		require.NoError(t, err, "delta %d", i)
		require.NoError(t, json.Unmarshal(f.Payload, &ev))
		require.Equal(t, int16(i), int16(binary.LittleEndian.Uint16(ev.Delta)), "delta %d in order", i)
	}
}

// TestSlowClientIsClosed: a client that stops reading while the agent
// talks is closed once a second of audio waits for it, with the reason
// recorded, and the pacer's sends never block on it.
func TestSlowClientIsClosed(t *testing.T) {
	c, client, p, frame := stalledPair(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.endMu.Lock()
		reason, detail := c.endReason, c.endDetail
		c.endMu.Unlock()
		if reason != "" {
			require.Equal(t, "error", reason)
			require.Equal(t, "client too slow to read", detail)
			break
		}
		require.True(t, time.Now().Before(deadline), "the slow client was not closed")
		t0 := time.Now()
		if c.q.pushAudio(frame, p) {
			c.sendNow()
		}
		require.Less(t, time.Since(t0), 50*time.Millisecond)
	}
	// The socket is closed: the client reads what was sent, then EOF.
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, client)
	require.NoError(t, err)
}
