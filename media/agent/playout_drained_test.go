package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPlayoutDrained(t *testing.T) {
	p := newPlayout(16000)
	defer p.release()
	ctx := context.Background()
	frame := make([]int16, 320)
	require.NoError(t, p.write(ctx, make([]int16, 640)))
	ok, _ := p.read(frame, time.Now())
	require.True(t, ok)
	require.False(t, p.Drained(), "more audio may come")
	p.finish(ctx)
	require.False(t, p.Drained(), "a frame left")
	ok, _ = p.read(frame, time.Now())
	require.True(t, ok)
	require.True(t, p.Drained(), "that was the last frame")
}

// TestPlayoutRefillsInSteps: a producer ahead of a full ring is woken once
// a quarter of the ring is free, not after every frame, and every sample
// still comes out once, in order.
func TestPlayoutRefillsInSteps(t *testing.T) {
	const rate = 8000
	p := newPlayout(rate)
	defer p.release()
	src := make([]int16, 5*rate)
	for i := range src {
		src[i] = int16(i)
	}
	done := make(chan error, 1)
	go func() {
		err := p.write(context.Background(), src)
		p.finish(context.Background())
		done <- err
	}()
	full := int64(playoutSeconds * rate)
	require.Eventually(t, func() bool { return p.written.Load() == full }, 5*time.Second, time.Millisecond)

	frame := make([]int16, rate/50)
	var out []int16
	read := func() {
		ok, _ := p.read(frame, time.Now())
		require.True(t, ok)
		out = append(out, frame...)
	}
	steps := int(full) / refillDivisor / len(frame) // frames until the refill room is free
	for range steps - 1 {
		read()
	}
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, full, p.written.Load(), "no refill before a quarter of the ring is free")
	read()
	require.Eventually(t, func() bool { return p.written.Load() == full+full/refillDivisor }, 5*time.Second, time.Millisecond,
		"one refill of a quarter ring")
	for {
		ok, finished := p.read(frame, time.Now())
		if finished {
			break
		}
		if ok {
			out = append(out, frame...)
			continue
		}
		time.Sleep(time.Millisecond) // the producer is between refills
	}
	require.NoError(t, <-done)
	require.Equal(t, src, out)
}
