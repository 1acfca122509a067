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
