package realtime

import (
	"encoding/base64"
	"encoding/json"
	"testing"

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
	// A slot fills before the writer is woken, and not before.
	q.pushAudio(frame(1), p)
	q.pushAudio(frame(2), p)
	require.False(t, pending())
	_, ok, _ := q.pop()
	require.False(t, ok, "a slot that may grow stays queued")
	q.pushAudio(frame(3), p)
	require.True(t, pending())
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
	q.pushAudio(frame(6), p)
	q.seal()
	require.True(t, pending())
	it, _, _ = q.pop()
	require.Equal(t, 2, it.n)
	require.Equal(t, []int16{5, 5, 6, 6}, q.frames[it.slot][:it.n*2])
	q.release(it.slot)
	q.pushAudio(frame(7), p)
	_, ok, _ = q.pop()
	require.False(t, ok, "a new slot after the seal")

	// Another playout's frame starts its own slot and releases the last.
	q.pushAudio(frame(8), p2)
	require.True(t, pending())
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
