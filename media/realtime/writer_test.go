package realtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/agent"
)

func TestOutQueueOrderAndSlowClients(t *testing.T) {
	q := newOutQueue(100, 4)
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
	q = newOutQueue(1<<20, 4)
	for range audioSlots {
		q.pushAudio(make([]int16, 4), p)
	}
	_, _, slow = q.pop()
	require.False(t, slow)
	q.pushAudio(make([]int16, 4), p)
	q.pushAudio(make([]int16, 4), p)
	_, _, slow = q.pop()
	require.True(t, slow)
}

func TestOutQueuePushAudioAllocatesNothing(t *testing.T) {
	q := newOutQueue(1<<20, 480)
	p := &agent.Playout{}
	frame := make([]int16, 480)
	allocs := testing.AllocsPerRun(200, func() {
		q.pushAudio(frame, p)
		it, _, _ := q.pop()
		q.release(it.slot)
	})
	require.Zero(t, allocs)
}
