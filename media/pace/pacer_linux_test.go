package pace

import (
	"bytes"
	"log/slog"
	"runtime/trace"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tidWorker notes the thread of each of its AfterTicks and of its Close.
type tidWorker struct {
	mu    sync.Mutex
	tids  map[int]int
	close int
	bound bool
}

func (w *tidWorker) AfterTicks(time.Time) {
	w.mu.Lock()
	w.tids[syscall.Gettid()]++
	w.mu.Unlock()
}

func (w *tidWorker) Close() error {
	w.mu.Lock()
	w.close = syscall.Gettid()
	w.mu.Unlock()
	return nil
}

type boundWorker struct{ tidWorker }

func (*boundWorker) ThreadBound() {}

// TestThreadBound: a ThreadBound Worker's AfterTicks and Close all run on
// one thread, its own; a plain Worker's move between threads, here where
// other goroutines keep the runtime's threads busy.
func TestThreadBound(t *testing.T) {
	var ws []*tidWorker
	p, err := New(Config{Period: time.Millisecond, Workers: 3, NewWorker: func(i int) Worker {
		if i == 2 {
			w := &tidWorker{tids: map[int]int{}}
			ws = append(ws, w)
			return w
		}
		w := &boundWorker{tidWorker{tids: map[int]int{}, bound: true}}
		ws = append(ws, &w.tidWorker)
		return w
	}}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 4 { // goroutines that come and go, so threads change hands
		busy.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					time.Sleep(50 * time.Microsecond)
				}
			}
		})
	}
	ticks := func(w *tidWorker) int {
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		for _, k := range w.tids {
			n += k
		}
		return n
	}
	require.Eventually(t, func() bool { return ticks(ws[0]) > 300 && ticks(ws[1]) > 300 && ticks(ws[2]) > 300 }, 10*time.Second, time.Millisecond)
	close(stop)
	busy.Wait()
	require.NoError(t, p.Close())
	var bound []int
	for _, w := range ws[:2] {
		require.Len(t, w.tids, 1, "one thread for every AfterTicks")
		for tid := range w.tids {
			require.Equal(t, tid, w.close, "Close on that thread too")
			bound = append(bound, tid)
		}
	}
	require.NotEqual(t, bound[0], bound[1], "a thread per worker")
	require.Greater(t, len(ws[2].tids), 1, "without ThreadBound the worker moved (else this test proves nothing)")
}

// TestPhasesInTrace: with the runtime's execution trace on, a tick's
// phases are regions of it, named for go tool trace.
func TestPhasesInTrace(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	w := &tidWorker{tids: map[int]int{}}
	p, err := New(Config{Period: time.Millisecond, AlignSends: true, NewWorker: func(int) Worker { return w }}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().Ticks > 20 }, 5*time.Second, time.Millisecond)
	require.NoError(t, p.Close())
	trace.Stop()
	for _, name := range []string{"pace.Ticks", "pace.wait", "pace.AfterTicks", "pace.PostTicks"} {
		require.True(t, bytes.Contains(buf.Bytes(), []byte(name)), "%s in the trace", name)
	}
}
