package pace

import (
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder notes every tick time; sleep, when set for a tick number, makes
// that Tick take that long (in a synctest bubble the fake clock advances).
type recorder struct {
	mu    sync.Mutex
	times []time.Time
	sleep map[int]time.Duration
}

func (r *recorder) Tick(now time.Time) {
	r.mu.Lock()
	r.times = append(r.times, now)
	d := r.sleep[len(r.times)]
	r.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
}

func (r *recorder) snapshot() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...)
}

// registerRecorders registers n new recorders on p.
func registerRecorders(t *testing.T, p *Pacer, n int) ([]*recorder, []Handle) {
	t.Helper()
	rs, hs := make([]*recorder, n), make([]Handle, n)
	for i := range rs {
		rs[i] = &recorder{}
		var err error
		hs[i], err = p.Register(rs[i])
		require.NoError(t, err)
	}
	return rs, hs
}

type counter struct{ n atomic.Int64 }

func (c *counter) Tick(time.Time) { c.n.Add(1) }

func TestConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"negative period": {Period: -time.Millisecond},
		"negative gap":    {MinGap: -1},
		"negative lag":    {MaxLag: -1},
		"gap over period": {Period: 10 * time.Millisecond, MinGap: 11 * time.Millisecond},
		"workers":         {Workers: -2},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(cfg, nil)
			require.ErrorIs(t, err, ErrBadConfig)
		})
	}
	c, err := Config{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, Config{Period: 20 * time.Millisecond, MinGap: 5 * time.Millisecond, MaxLag: 100 * time.Millisecond, Workers: 1}, c)
}

// TestScheduleIsDriftFree checks that ticks land exactly on base+n*period
// even when Ticks take time: a slow tick does not push the later ones.
func TestScheduleIsDriftFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p, err := New(Config{}, nil)
		require.NoError(t, err)
		defer p.Close()
		r := &recorder{sleep: map[int]time.Duration{3: 7 * time.Millisecond, 10: 19 * time.Millisecond}}
		_, err = p.Register(r)
		require.NoError(t, err)

		time.Sleep(time.Second + time.Millisecond)
		got := r.snapshot()
		require.Len(t, got, 50)
		for i, at := range got {
			require.Equal(t, time.Duration(i+1)*20*time.Millisecond, at.Sub(start), "tick %d", i+1)
		}
		st := p.Stats()
		require.EqualValues(t, 50, st.Ticks)
		require.Zero(t, st.Skipped)
		require.Zero(t, st.LateMax)
		require.Equal(t, 19*time.Millisecond, st.CostMax)
	})
}

// TestCatchUpWithoutBurst stalls one tick for 70 ms: the missed ticks run
// MinGap apart until the schedule is met again; none is skipped and no two
// ticks come closer than MinGap.
func TestCatchUpWithoutBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p, err := New(Config{}, nil)
		require.NoError(t, err)
		defer p.Close()
		r := &recorder{sleep: map[int]time.Duration{5: 70 * time.Millisecond}}
		_, err = p.Register(r)
		require.NoError(t, err)

		time.Sleep(500*time.Millisecond + time.Millisecond)
		got := r.snapshot()
		require.Len(t, got, 25, "every tick runs, late or not")
		ms := func(i int) time.Duration { return got[i].Sub(start) }
		// Tick 5 at 100 ms stalls to 170 ms; ticks 6..9 were due at 120..180.
		want := []time.Duration{100, 170, 175, 180, 185, 200}
		for k, w := range want {
			require.Equal(t, w*time.Millisecond, ms(4+k), "tick %d", 5+k)
		}
		for i := 1; i < len(got); i++ {
			require.GreaterOrEqual(t, got[i].Sub(got[i-1]), 5*time.Millisecond, "ticks %d and %d", i, i+1)
		}
		st := p.Stats()
		require.Zero(t, st.Skipped)
		require.Equal(t, 50*time.Millisecond, st.LateMax) // tick 6, due 120, ran at 170
	})
}

// TestSkipBeyondMaxLag stalls for 300 ms: the backlog beyond MaxLag is
// dropped and counted instead of replayed.
func TestSkipBeyondMaxLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p, err := New(Config{}, nil)
		require.NoError(t, err)
		defer p.Close()
		r := &recorder{sleep: map[int]time.Duration{2: 300 * time.Millisecond}}
		_, err = p.Register(r)
		require.NoError(t, err)

		time.Sleep(600*time.Millisecond + time.Millisecond)
		got := r.snapshot()
		st := p.Stats()
		// Tick 2 ran at 40 ms and returned at 340 ms, when tick 3 (due 60)
		// was 280 ms late: 14 periods are skipped and tick 17 (due 340) runs
		// on time; the schedule continues from there.
		require.EqualValues(t, 14, st.Skipped)
		require.Equal(t, 340*time.Millisecond, got[2].Sub(start))
		require.Equal(t, 360*time.Millisecond, got[3].Sub(start))
		require.EqualValues(t, 30-14, len(got))
		require.EqualValues(t, len(got), st.Ticks)
	})
}

func TestRegisterUnregister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Config{}, nil)
		require.NoError(t, err)
		defer p.Close()
		var a, b, c counter
		ha, err := p.Register(&a)
		require.NoError(t, err)
		hb, err := p.Register(&b)
		require.NoError(t, err)
		require.Equal(t, 2, p.Stats().Streams)

		time.Sleep(100*time.Millisecond + time.Microsecond)
		require.EqualValues(t, 5, a.n.Load())
		require.EqualValues(t, 5, b.n.Load())

		p.Unregister(ha)
		p.Unregister(ha) // twice is harmless
		p.Unregister(Handle{})
		require.Equal(t, 1, p.Stats().Streams)

		// c reuses a's slot; a's stale handle must not remove it.
		hc, err := p.Register(&c)
		require.NoError(t, err)
		require.Equal(t, ha.slot, hc.slot)
		p.Unregister(ha)
		require.Equal(t, 2, p.Stats().Streams)

		time.Sleep(100 * time.Millisecond)
		require.EqualValues(t, 5, a.n.Load(), "no tick after Unregister")
		require.EqualValues(t, 10, b.n.Load())
		require.EqualValues(t, 5, c.n.Load())

		p.Unregister(hb)
		p.Unregister(hc)
		require.Zero(t, p.Stats().Streams)
	})
}

type panicker struct{ n atomic.Int64 }

func (s *panicker) Tick(time.Time) {
	if s.n.Add(1) == 3 {
		panic("boom")
	}
}

func TestPanickingStreamIsRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Config{}, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		defer p.Close()
		var before, after counter
		bad := &panicker{}
		_, err = p.Register(&before)
		require.NoError(t, err)
		_, err = p.Register(bad)
		require.NoError(t, err)
		_, err = p.Register(&after)
		require.NoError(t, err)

		time.Sleep(200*time.Millisecond + time.Microsecond)
		st := p.Stats()
		require.EqualValues(t, 1, st.Panics)
		require.Equal(t, 2, st.Streams)
		require.EqualValues(t, 3, bad.n.Load(), "not ticked after the panic")
		require.EqualValues(t, 10, before.n.Load())
		require.EqualValues(t, 10, after.n.Load(), "streams after the broken one still tick")
	})
}

func TestCloseStopsTicksAndGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := New(Config{Period: time.Millisecond}, nil)
	require.NoError(t, err)
	var c counter
	_, err = p.Register(&c)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.n.Load() >= 3 }, time.Second, time.Millisecond)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	n := c.n.Load()
	time.Sleep(5 * time.Millisecond)
	require.Equal(t, n, c.n.Load(), "no tick after Close")
	_, err = p.Register(&c)
	require.ErrorIs(t, err, ErrClosed)
	requireNoLeak(t, before)
}

// requireNoLeak waits up to a second for the goroutine count to fall back
// to before. (require.Eventually runs its condition on a goroutine of its
// own, so it cannot count.)
func requireNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines leaked")
}

// TestRealClock runs the pacer on the real clock for half a second: the
// tick count follows the wall clock (no drift) whatever the scheduling noise.
func TestRealClock(t *testing.T) {
	p, err := New(Config{}, nil)
	require.NoError(t, err)
	defer p.Close()
	r := &recorder{}
	_, err = p.Register(r)
	require.NoError(t, err)
	time.Sleep(510 * time.Millisecond)
	got := r.snapshot()
	require.GreaterOrEqual(t, len(got), 24)
	require.LessOrEqual(t, len(got), 26)
	span := got[len(got)-1].Sub(got[0])
	want := time.Duration(len(got)-1) * 20 * time.Millisecond
	require.InDelta(t, float64(want), float64(span), float64(10*time.Millisecond), "ticks follow base+n*period")
}

type nop struct{ x int }

func (s *nop) Tick(time.Time) { s.x++ }

// TestTickDoesNotAllocate runs the tick loop over 1000 streams, on one
// goroutine and on three workers.
func TestTickDoesNotAllocate(t *testing.T) {
	for _, workers := range []int{1, 3} {
		p, err := New(Config{Period: time.Hour, Workers: workers}, nil)
		require.NoError(t, err)
		streams := make([]nop, 1000)
		for i := range streams {
			_, err := p.Register(&streams[i])
			require.NoError(t, err)
		}
		now := time.Now()
		require.Zero(t, testing.AllocsPerRun(100, func() { p.tick(at(now)) }), "%d workers", workers)
		for i := range streams {
			require.Equal(t, 101, streams[i].x)
		}
		require.NoError(t, p.Close())
	}
}

func TestHistogram(t *testing.T) {
	for _, us := range []uint64{0, 1, 15, 16, 17, 31, 32, 33, 100, 1000, 19999, 20000, 1 << 29} {
		i := histIndex(us)
		require.GreaterOrEqual(t, histUpper(i), us, "%d µs", us)
		if i > 0 {
			require.Less(t, histUpper(i-1), us, "%d µs", us)
		}
		require.LessOrEqual(t, float64(histUpper(i)-us), float64(us)/16+1, "%d µs within 1/16", us)
	}
	var h histogram
	require.Zero(t, h.quantile(0.99))
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	require.InDelta(t, 500, h.quantile(0.5).Microseconds(), 500/16+1)
	require.InDelta(t, 990, h.quantile(0.99).Microseconds(), 990/16+1)
	require.Equal(t, time.Millisecond, h.quantile(1))
}

// TestWorkers spreads streams over three workers: every stream is ticked
// exactly once per tick, with the tick's time, the load is balanced, and
// Unregister and panics behave as with one goroutine.
func TestWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Config{Workers: 3}, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		defer p.Close()
		rs, hs := registerRecorders(t, p, 10)
		bad := &panicker{}
		_, err = p.Register(bad)
		require.NoError(t, err)
		for _, sh := range p.shards {
			sh.mu.Lock()
			n := len(sh.streams)
			sh.mu.Unlock()
			require.InDelta(t, 11.0/3, n, 1)
		}
		time.Sleep(100*time.Millisecond + time.Microsecond)
		p.Unregister(hs[4])
		time.Sleep(100 * time.Millisecond)
		for i, r := range rs {
			got := r.snapshot()
			want := 10
			if i == 4 {
				want = 5
			}
			require.Len(t, got, want, "stream %d", i)
			for k, at := range got {
				require.Equal(t, rs[0].snapshot()[k], at, "same tick time for all")
			}
		}
		require.EqualValues(t, 3, bad.n.Load())
		st := p.Stats()
		require.EqualValues(t, 1, st.Panics)
		require.Equal(t, 9, st.Streams)
	})
}

// TestWorkersClose closes a pacer with workers while ticks run; every
// goroutine ends.
func TestWorkersClose(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		p, err := New(Config{Period: time.Millisecond, MinGap: 100 * time.Microsecond, Workers: 4}, nil)
		require.NoError(t, err)
		var c counter
		for range 8 {
			_, err := p.Register(&c)
			require.NoError(t, err)
		}
		time.Sleep(3 * time.Millisecond)
		require.NoError(t, p.Close())
		n := c.n.Load()
		require.Zero(t, n%8, "a tick runs on all workers or not at all")
	}
	requireNoLeak(t, before)
}

// phased logs its Tick and PostTick calls into a shared journal.
type phased struct {
	id      int
	journal *[]string
	nows    *[]time.Time
	boom    bool
}

func (s *phased) Tick(now time.Time) {
	*s.journal = append(*s.journal, "tick")
	*s.nows = append(*s.nows, now)
}

func (s *phased) PostTick(now time.Time) {
	*s.journal = append(*s.journal, "post")
	*s.nows = append(*s.nows, now)
	if s.boom {
		panic("boom")
	}
}

// TestPostTickFollowsEveryTick: in each tick of a share, every stream's
// Tick runs before any PostTick, with the same now; plain Streams get no
// PostTick; a PostTick that panics unregisters its stream.
func TestPostTickFollowsEveryTick(t *testing.T) {
	p, err := New(Config{Period: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	var journal []string
	var nows []time.Time
	a := &phased{id: 1, journal: &journal, nows: &nows}
	b := &phased{id: 2, journal: &journal, nows: &nows}
	var plain counter
	for _, s := range []Stream{a, &plain, b} {
		_, err := p.Register(s)
		require.NoError(t, err)
	}
	now := time.Now()
	p.tick(at(now))
	require.Equal(t, []string{"tick", "tick", "post", "post"}, journal)
	for _, n := range nows {
		require.Equal(t, now, n)
	}
	require.EqualValues(t, 1, plain.n.Load())

	b.boom = true
	p.tick(at(now.Add(time.Second)))
	require.EqualValues(t, 1, p.Stats().Panics)
	require.Equal(t, 2, p.Stats().Streams)
	journal = journal[:0]
	p.tick(at(now.Add(2 * time.Second)))
	require.Equal(t, []string{"tick", "post"}, journal, "the panicking stream is gone")
	require.EqualValues(t, 3, plain.n.Load())
}

// journalWorker is a Worker that notes its AfterTicks in a journal.
type journalWorker struct {
	i       int
	journal *[]string
	boom    bool
}

func (w *journalWorker) AfterTicks(_, _ time.Time) {
	*w.journal = append(*w.journal, "after")
	if w.boom {
		panic("boom")
	}
}

// TestWorkerAfterTicks: each worker's AfterTicks runs once per tick,
// between its share's Ticks and PostTicks; Worker hands a stream its
// worker's, and nothing for a handle that names no stream; a panicking
// AfterTicks is counted and the clock goes on.
func TestWorkerAfterTicks(t *testing.T) {
	var journal []string
	var made []*journalWorker
	p, err := New(Config{Period: time.Hour, NewWorker: func(i int) Worker {
		w := &journalWorker{i: i, journal: &journal}
		made = append(made, w)
		return w
	}}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	require.Len(t, made, 1)
	var nows []time.Time
	a := &phased{id: 1, journal: &journal, nows: &nows}
	b := &phased{id: 2, journal: &journal, nows: &nows}
	ha, err := p.Register(a)
	require.NoError(t, err)
	_, err = p.Register(b)
	require.NoError(t, err)
	require.Same(t, made[0], p.Worker(ha))
	require.Nil(t, p.Worker(Handle{}))

	now := time.Now()
	p.tick(at(now))
	require.Equal(t, []string{"tick", "tick", "after", "post", "post"}, journal)

	made[0].boom = true
	journal = journal[:0]
	p.tick(at(now.Add(time.Second)))
	require.Equal(t, []string{"tick", "tick", "after", "post", "post"}, journal, "the streams run on")
	require.EqualValues(t, 1, p.Stats().Panics)
	require.Equal(t, 2, p.Stats().Streams)

	p.Unregister(ha)
	require.Nil(t, p.Worker(ha), "an unregistered handle has no worker")
}

// TestWorkerPerShard: with several workers each share has its own Worker,
// given its index, and a nil Worker means no AfterTicks.
func TestWorkerPerShard(t *testing.T) {
	var mu sync.Mutex
	runs := map[int]int{}
	p, err := New(Config{Period: time.Hour, Workers: 3, NewWorker: func(i int) Worker {
		if i == 2 {
			return nil
		}
		return afterFunc(func() {
			mu.Lock()
			runs[i]++
			mu.Unlock()
		})
	}}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	var hs []Handle
	for range 3 {
		h, err := p.Register(&counter{})
		require.NoError(t, err)
		hs = append(hs, h)
	}
	p.tick(at(time.Now()))
	p.tick(at(time.Now()))
	require.Equal(t, map[int]int{0: 2, 1: 2}, runs)
	nils := 0
	for _, h := range hs {
		if p.Worker(h) == nil {
			nils++
		}
	}
	require.Equal(t, 1, nils, "one stream sits on the worker without a Worker")
}

type afterFunc func()

func (f afterFunc) AfterTicks(_, _ time.Time) { f() }

// closingWorker counts its AfterTicks and Closes.
type closingWorker struct{ ticks, closes atomic.Int64 }

func (w *closingWorker) AfterTicks(_, _ time.Time) { w.ticks.Add(1) }
func (w *closingWorker) Close() error              { w.closes.Add(1); return nil }

// TestWorkerClosedAfterLastTick: Close closes each Worker that is an
// io.Closer once, after the last tick, however often Close is called.
func TestWorkerClosedAfterLastTick(t *testing.T) {
	var ws []*closingWorker
	p, err := New(Config{Period: time.Millisecond, Workers: 2, NewWorker: func(int) Worker {
		w := &closingWorker{}
		ws = append(ws, w)
		return w
	}}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ws[0].ticks.Load() > 3 && ws[1].ticks.Load() > 3 }, 5*time.Second, time.Millisecond)
	for _, w := range ws {
		require.Zero(t, w.closes.Load())
	}
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	for _, w := range ws {
		n := w.ticks.Load()
		require.EqualValues(t, 1, w.closes.Load())
		time.Sleep(5 * time.Millisecond)
		require.Equal(t, n, w.ticks.Load(), "no tick after Close")
	}
}

// TestPreciseWake: with PreciseWake ticks start within a fraction of a
// millisecond of their time, where the runtime's timer alone is late by
// up to a millisecond (its epoll timeouts are whole milliseconds); both
// measured here, on the real clock, over 100 ticks each.
func TestPreciseWake(t *testing.T) {
	lateP50 := func(precise bool) time.Duration {
		p, err := New(Config{Period: 10 * time.Millisecond, PreciseWake: precise}, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		defer p.Close()
		require.Eventually(t, func() bool { return p.Stats().Ticks >= 100 }, 10*time.Second, time.Millisecond)
		return p.Stats().LateP50
	}
	plain, precise := lateP50(false), lateP50(true)
	t.Logf("median tick lateness: timer %v, PreciseWake %v", plain, precise)
	require.Less(t, precise, 500*time.Microsecond)
	require.Less(t, precise, plain)
}

// TestAlignSends: with AlignSends a Worker's AfterTicks gets the tick's
// send time, on the period's grid tick after tick, and gets it ahead of
// that time (half a period) though the Ticks before it take 0 or 4 ms in
// turn; without it the send time is zero (at once) and AfterTicks follows
// the Ticks' cost. The lateness counts sends handed over after their
// time, not the early start.
func TestAlignSends(t *testing.T) {
	type after struct{ at, send time.Time }
	run := func(align bool) ([]after, Stats) {
		var mu sync.Mutex
		var afters []after
		p, err := New(Config{Period: 20 * time.Millisecond, PreciseWake: true, AlignSends: align, NewWorker: func(int) Worker {
			return sendFunc(func(send time.Time) {
				mu.Lock()
				afters = append(afters, after{time.Now(), send})
				mu.Unlock()
			})
		}}, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		defer p.Close()
		_, err = p.Register(&busy{every: 2, spin: 4 * time.Millisecond})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return p.Stats().Ticks >= 40 }, 10*time.Second, time.Millisecond)
		st := p.Stats()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(afters), st
	}
	plain, _ := run(false)
	var devs []time.Duration
	for i, a := range plain {
		require.True(t, a.send.IsZero(), "without AlignSends the sends go at once")
		if i > 0 {
			d := a.at.Sub(plain[i-1].at) - 20*time.Millisecond
			devs = append(devs, max(d, -d))
		}
	}
	slices.Sort(devs)
	require.Greater(t, devs[len(devs)/2], 3*time.Millisecond, "AfterTicks follows the Ticks' cost")

	aligned, st := run(true)
	early := 0
	for i, a := range aligned {
		require.False(t, a.send.IsZero())
		if a.at.Before(a.send) {
			early++
		}
		if i > 0 {
			require.Equal(t, 20*time.Millisecond, a.send.Sub(aligned[i-1].send), "send times on the period's grid")
		}
	}
	t.Logf("%d of %d ticks handed their sends over before their time", early, len(aligned))
	require.GreaterOrEqual(t, early, len(aligned)*9/10)
	require.Less(t, st.LateP50, time.Millisecond, "starting early is not lateness")
}

// sendFunc is a Worker that hands each tick's send time to a func.
type sendFunc func(send time.Time)

func (f sendFunc) AfterTicks(_, send time.Time) { f(send) }

// TestAlignSendsWithoutWorker: with no Worker to hold the sends (media/rtp
// without io_uring) AlignSends starts no tick early.
func TestAlignSendsWithoutWorker(t *testing.T) {
	p, err := New(Config{Period: time.Hour, AlignSends: true, NewWorker: func(int) Worker { return nil }}, nil)
	require.NoError(t, err)
	defer p.Close()
	p.tick(at(time.Now()))
	require.Zero(t, p.lead())
}

// busy is a stream whose every every-th Tick spins for spin.
type busy struct {
	n     int
	every int
	spin  time.Duration
}

func (b *busy) Tick(time.Time) {
	if b.n++; b.n%b.every == 0 {
		for end := time.Now().Add(b.spin); time.Now().Before(end); {
		}
	}
}

// at is a tick at now whose sends are due at once.
func at(now time.Time) tickTimes { return tickTimes{now: now, send: now} }

// prefetching journals its Prefetch, Tick and PostTick calls.
type prefetching struct {
	id      int
	journal *[]string
}

func (s *prefetching) Tick(time.Time) { *s.journal = append(*s.journal, fmt.Sprintf("tick%d", s.id)) }
func (s *prefetching) PostTick(time.Time) {
	*s.journal = append(*s.journal, fmt.Sprintf("post%d", s.id))
}
func (s *prefetching) Prefetch(stage int, post bool) {
	*s.journal = append(*s.journal, fmt.Sprintf("pf%d.%d/%v", s.id, stage, post))
}

// TestPrefetchAhead: before a stream runs, the stream PrefetchStages-k
// ahead gets stage k, for Ticks and PostTicks alike, so each stream gets
// its stages in order, the last one just before the stream ahead of it
// runs; NoPrefetch turns them off.
func TestPrefetchAhead(t *testing.T) {
	require.Equal(t, 2, PrefetchStages, "the expected journal below is for two stages")
	for _, off := range []bool{false, true} {
		p, err := New(Config{Period: time.Hour, NoPrefetch: off}, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		var journal []string
		for i := range 4 {
			_, err := p.Register(&prefetching{id: i, journal: &journal})
			require.NoError(t, err)
		}
		var plain counter
		_, err = p.Register(&plain) // no Prefetcher: skipped
		require.NoError(t, err)
		p.tick(at(time.Now()))
		require.NoError(t, p.Close())
		want := []string{
			"pf2.0/false", "pf1.1/false", "tick0",
			"pf3.0/false", "pf2.1/false", "tick1",
			"pf3.1/false", "tick2",
			"tick3",
			"pf2.0/true", "pf1.1/true", "post0",
			"pf3.0/true", "pf2.1/true", "post1",
			"pf3.1/true", "post2",
			"post3",
		}
		if off {
			want = slices.DeleteFunc(want, func(s string) bool { return strings.HasPrefix(s, "pf") })
		}
		require.Equal(t, want, journal, "NoPrefetch %v", off)
		require.EqualValues(t, 1, plain.n.Load())
	}
}

// holding is a Holder whose sends take 20 ms to go out after Sent is
// asked.
type holding struct{ sent atomic.Bool }

func (*holding) AfterTicks(_, _ time.Time) {}
func (h *holding) Sent() {
	time.Sleep(20 * time.Millisecond)
	h.sent.Store(true)
}

// TestUnregisterWaitsForHolder: Unregister returns only once the stream's
// worker, a Holder, says what it was handed has gone out.
func TestUnregisterWaitsForHolder(t *testing.T) {
	w := &holding{}
	p, err := New(Config{Period: 5 * time.Millisecond, AlignSends: true, NewWorker: func(int) Worker { return w }}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	var c counter
	h, err := p.Register(&c)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.n.Load() > 2 }, 5*time.Second, time.Millisecond)
	p.Unregister(h)
	require.True(t, w.sent.Load(), "Unregister returned before the held sends went out")
}
