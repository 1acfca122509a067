package pace

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/trace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// nopWorker is a Worker that does nothing: with it AlignSends starts each
// tick early.
type nopWorker struct{}

func (nopWorker) AfterTicks(_, _ time.Time) {}

// TestPhasesInTrace: with the runtime's execution trace on, a tick's
// phases are regions of it, named for go tool trace.
func TestPhasesInTrace(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	p, err := New(Config{Period: time.Millisecond, AlignSends: true, NewWorker: func(int) Worker { return nopWorker{} }}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().Ticks > 20 }, 5*time.Second, time.Millisecond)
	require.NoError(t, p.Close())
	trace.Stop()
	for _, name := range []string{"pace.Ticks", "pace.AfterTicks", "pace.PostTicks"} {
		require.True(t, bytes.Contains(buf.Bytes(), []byte(name)), "%s in the trace", name)
	}
}

// gcNode is a small pointerful object: a heap of millions of them takes the
// GC tens of milliseconds to mark.
type gcNode struct {
	next *gcNode
	_    int
}

// TestTicksOnTimeWhileGCMarks: with one P (a node pinned to one core) and
// nothing else to run, the GC's idle mark worker holds the P through a
// mark phase, and the runtime looks at its timers only when the worker
// stops (at the end of the phase, or when the runtime's monitor preempts
// it after 10 ms); it does stop for network readiness. The pacer's ticks
// stay on time through such phases all the same.
func TestTicksOnTimeWhileGCMarks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var head *gcNode
	for range 3 << 20 {
		head = &gcNode{next: head}
	}
	defer runtime.KeepAlive(head)
	// The property is systematic, the noise is not. Without the nudge
	// most ticks inside a mark phase wait for the runtime's monitor to
	// preempt the idle worker (10 ms): p50 was 0.045-0.077 of a cycle and
	// p99 0.16-0.40; with it p50 was 0.001-0.016 and p99 0.05-0.20. Under
	// make test's concurrent packages on two cores the OS can hold this
	// lone thread off the CPU for a tick or two, and of 50-100 ticks p99
	// is the second latest: so an attempt may fail to the OS, and three
	// in a row only to the pacer. p50 is what separates the two most, and
	// the OS's odd late tick does not move it.
	//
	// On a faster machine a cycle is shorter (65-106 ms on a 2-vCPU EPYC)
	// but what is left with the nudge is not: p50 1.5-4.6 ms, against
	// 6.7-12.8 ms with PreciseWake off, in the same session. So p50's
	// bound is a cycle's fortieth but never under 4 ms, which still fails
	// a pacer without the nudge on either machine.
	const attempts = 3
	var results []string
	for i := range attempts {
		p50, p99, mark := ticksLateWhileGCMarks(t)
		p50Bound := max(mark/40, 4*time.Millisecond)
		if p50 < p50Bound && p99 < mark/5 {
			return
		}
		results = append(results, fmt.Sprintf("p50 %v p99 %v against %v and %v", p50, p99, p50Bound, mark/5))
		t.Logf("attempt %d: tick lateness p50 %v (bound %v), p99 %v (bound %v)", i+1, p50, p50Bound, p99, mark/5)
	}
	t.Fatalf("ticks waited for the GC's idle mark worker in %d attempts of %d: %v", attempts, attempts, results)
}

// ticksLateWhileGCMarks runs a pacer through eight GC cycles and returns
// its ticks' lateness p50 and p99, and how long one cycle over the test's
// heap took, which grows with the machine's load.
func ticksLateWhileGCMarks(t *testing.T) (p50, p99, mark time.Duration) {
	start := time.Now()
	runtime.GC()
	mark = time.Since(start)
	t.Logf("a GC cycle over the test's heap: %v", mark)
	p, err := New(Config{Period: 20 * time.Millisecond, PreciseWake: true}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	time.Sleep(100 * time.Millisecond)
	const cycles = 8
	for range cycles {
		runtime.GC()
		time.Sleep(30 * time.Millisecond)
	}
	st := p.Stats()
	t.Logf("%d ticks: lateness p50 %v p99 %v max %v", st.Ticks, st.LateP50, st.LateP99, st.LateMax)
	// Most ticks fall inside a mark phase. What lateness is left with the
	// nudge comes from the fractional mark worker, which takes its quarter
	// of the P in runs that grow with the phase's length and polls nothing.
	return st.LateP50, st.LateP99, mark
}

// TestRealtimeWorkers: with Config.Realtime the workers tick on threads
// of their own, woken through the kernel: every stream's Tick and
// PostTick run every tick on both workers, the sends are handed over
// before the tick's time, and Close ends the threads (no goroutine left).
func TestRealtimeWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := New(Config{Workers: 2, Realtime: 5, AlignSends: true, NewWorker: func(int) Worker { return nopWorker{} }}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, p.doneKick, "eventfd wake-ups")
	var streams []*counted
	for i := range 4 {
		s := &counted{id: i}
		streams = append(streams, s)
		_, err := p.Register(s)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return p.Stats().Ticks >= 20 }, 5*time.Second, time.Millisecond)
	require.NoError(t, p.Close())
	st := p.Stats()
	for _, s := range streams {
		require.InDelta(t, float64(st.Ticks), float64(s.ticks.Load()), 1, "stream %d ticked every tick", s.id)
		require.Equal(t, s.ticks.Load(), s.posts.Load(), "stream %d", s.id)
	}
	require.Less(t, st.LateP50, 5*time.Millisecond)
	require.Equal(t, uint64(0), st.Panics)
	requireNoLeak(t, before)
}

// counted counts its Ticks and PostTicks.
type counted struct {
	id           int
	ticks, posts atomic.Uint64
}

func (c *counted) Tick(time.Time)     { c.ticks.Add(1) }
func (c *counted) PostTick(time.Time) { c.posts.Add(1) }

// TestRealtimeAllowedLeavesNoThreadBehind: the probe answers for the
// process (as root here: allowed; an invalid priority: refused) and
// leaves the calling goroutine's thread in its own class.
func TestRealtimeAllowedLeavesNoThreadBehind(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if unix.Geteuid() == 0 {
		require.NoError(t, RealtimeAllowed(10))
	}
	require.Error(t, RealtimeAllowed(100), "priority out of SCHED_FIFO's range")
	a, err := unix.SchedGetAttr(0, 0)
	require.NoError(t, err)
	require.Equal(t, uint32(unix.SCHED_NORMAL), a.Policy, "the caller's thread stays in its class")
}
