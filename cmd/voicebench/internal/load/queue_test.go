package load

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFrameQueueOrderAndOverflow(t *testing.T) {
	q := NewFrameQueue()
	_, ok := q.Pop()
	require.False(t, ok)
	for i := range queueLen {
		require.True(t, q.Push(i))
	}
	require.False(t, q.Push(999), "full")
	require.Equal(t, uint64(1), q.Dropped())
	select {
	case <-q.Ready():
	default:
		t.Fatal("no wake-up after Push")
	}
	for i := range queueLen {
		f, ok := q.Pop()
		require.True(t, ok)
		require.Equal(t, i, f)
	}
	_, ok = q.Pop()
	require.False(t, ok)
}

func TestFrameQueueConcurrent(t *testing.T) {
	q := NewFrameQueue()
	const n = 100000
	var got []int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			<-q.Ready()
			for {
				f, ok := q.Pop()
				if !ok {
					break
				}
				if f < 0 {
					return
				}
				got = append(got, f)
			}
		}
	}()
	for i := range n {
		q.Push(i)
	}
	lost := int(q.Dropped())
	for !q.Push(-1) { // the end marker must get through
		runtime.Gosched()
	}
	wg.Wait()
	require.Equal(t, n, len(got)+lost, "every frame delivered or counted as dropped")
	for i := 1; i < len(got); i++ {
		require.Less(t, got[i-1], got[i], "frames stay in order")
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { q.Push(1); q.Pop() }))
}
