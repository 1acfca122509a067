package pace

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

// Stream is anything the Pacer drives: typically one call's outbound RTP
// sender. Tick runs on the pacer goroutine once per period; now is the
// monotonic clock reading at the start of this tick (the same value for
// every stream of the tick). Tick must not block, must not call the
// Pacer's Register or Unregister, and should finish in microseconds: the
// whole node shares the period.
type Stream interface {
	Tick(now time.Time)
}

// PostTicker is a Stream with work that should follow the sends of a
// tick: receiving what arrived since the last one and processing it. Each
// tick first calls Tick on every stream of a worker's share, then PostTick
// on those of them that are PostTickers, on the same goroutine with the
// same now, so the sends leave at the front of the tick, at the same
// offset every period whatever the receive work costs. PostTick has the
// rules of Tick (no blocking, no Register or Unregister) but may do the
// stream's per-frame processing: it is what the worker goroutine is for.
type PostTicker interface {
	Stream
	PostTick(now time.Time)
}

// Prefetcher is a Stream that can name the memory its next Tick (post
// false) or PostTick (post true) touches, one link of its pointers at a
// time, for the processor to load while the pacer runs the streams before
// it (media/prefetch). Stage 0 asks for the stream's own lines; stage k
// for the lines reached through pointers read from those stage k-1 asked
// for. The pacer gives stage k to the stream PrefetchStages-k ahead of
// the one it runs, so each stage reads lines that had a stream's run to
// arrive. Prefetch must only read and hint: it runs on the worker's
// goroutine, outside the stream's locks, and what it reads may be stale.
type Prefetcher interface {
	Prefetch(stage int, post bool)
}

// PrefetchStages is how many streams ahead of the one running the pacer
// starts prefetching a stream, one stage per stream.
const PrefetchStages = 2

// Handle names one registration, for Unregister. The zero Handle names
// nothing.
type Handle struct {
	slot uint32
	gen  uint32
}

// Worker is the per-worker part of one kind of stream (Config.NewWorker):
// what the streams of a worker's share gather during their Ticks and
// finish together, such as sending all their packets in one system call
// (media/rtp). AfterTicks runs on the worker's goroutine once per tick,
// after every Tick of its share and before any PostTick, under the share's
// lock, so that when Unregister returns the work a stream left in its
// Worker during its last Tick is done (or, for a Holder, handed over and
// waited for). It has the rules of Tick. send is when the tick's sends
// are due (Config.AlignSends), or the zero Time for at once: a Worker
// hands its sends over with that time (media/rtp: to a thread of its
// own) and returns, without waiting for it. A Worker that is also an
// io.Closer is closed by Pacer.Close, after the last tick.
type Worker interface {
	AfterTicks(now, send time.Time)
}

// Holder is a Worker whose AfterTicks hands sends over to go out later
// (a send time ahead): Unregister calls Sent, under the lock of the
// stream's share, and returns only after it, so that once a stream is
// unregistered nothing it left behind still uses its resources (media/rtp:
// a packet held for a socket the session then closes would otherwise go
// out on whatever socket takes its descriptor next). Sent returns when
// what the last AfterTicks handed over has gone out.
type Holder interface {
	Worker
	Sent()
}

// Config tunes a Pacer. The zero value is the production setting.
type Config struct {
	// Period is the interval between ticks; 0 means 20 ms (one frame).
	Period time.Duration
	// MinGap is the shortest interval between two ticks while the pacer
	// catches up after running late; 0 means Period/4.
	MinGap time.Duration
	// MaxLag is the largest backlog the pacer catches up on; ticks further
	// behind than this are skipped and counted. 0 means 5 periods.
	MaxLag time.Duration
	// Workers splits the streams over this many goroutines, all driven by
	// the one clock: each tick the clock goroutine runs the first share
	// itself and wakes one goroutine per other share (a wake-up per worker
	// per tick, none per stream), so per-stream work can use more than one
	// core. 0 means 1: a single goroutine does everything, which suits
	// streams that only send (a tick has no goroutine to wait for). A node
	// whose streams also receive and process in PostTick (media/rtp) wants
	// runtime.GOMAXPROCS(0).
	Workers int
	// PreciseWake waits out the last millisecond before each tick (a
	// quarter of the period, if that is less) with a nanosleep that keeps
	// the clock goroutine's P, so ticks start within microseconds of
	// their time. Without it a tick starts up to a millisecond late, at
	// random: Go's timers wake through epoll, whose timeout is in whole
	// milliseconds, and that lateness is jitter on every packet the tick
	// sends. The price: while the clock
	// sleeps no other goroutine runs on its P. On Linux it also arms a
	// timerfd as a backstop behind each of the runtime's timers the pacer
	// waits on (see nudger), so that the GC's idle marking, which holds a
	// lone P without looking at timers, yields it on time. Meant for a
	// media node's pacer (20 ms ticks), not for a fast clock.
	PreciseWake bool
	// AlignSends starts each tick's Ticks half a period ahead of the
	// tick's time and gives the Workers that time as the sends' (see
	// Worker): media/rtp hands a tick's packets to a send thread outside
	// the Go scheduler, which submits them at that time, so they leave at
	// the same instant every period, however long the Ticks before them
	// took and however late the Go scheduler ran them, as long as it is
	// within the half period.
	// Without it they leave when the worker's Ticks end, so the spread of
	// that time (streams whose frames cost more or less to make: Opus
	// speech against silence, an agent talking or not; a worker waiting
	// for a P) is jitter on every packet. The price is the half period:
	// each frame is taken from its stream that much before it leaves.
	// Workers that are nil (no Worker, no batching) get no send time; with
	// none at all (media/rtp without io_uring) ticks start on their time
	// as without AlignSends.
	AlignSends bool
	// NewWorker, when set, makes each worker's Worker (see the type),
	// given the worker's index; Pacer.Worker hands it to the streams of
	// that worker. It may return nil, for no per-worker work.
	NewWorker func(i int) Worker
	// NoPrefetch turns off the Prefetcher calls (for comparing; they are
	// on by default).
	NoPrefetch bool
	// Realtime, when not 0, runs each worker (the clock's too) on an OS
	// thread of its own in the kernel's SCHED_FIFO class at this priority
	// (1..99; Linux, as root or with CAP_SYS_NICE), and takes the Go
	// scheduler out of a tick's wake-ups: the clock sleeps in a blocking
	// clock_nanosleep instead of on the runtime's timers, it wakes the
	// other workers and they report back through eventfds, so the kernel
	// wakes each worker's thread itself, at once, and the thread takes a
	// P on its way back from the system call. Without it every wake-up is
	// a goroutine made runnable, which waits for a P while other
	// goroutines hold them all (up to the runtime's 10 ms preemption).
	// The thread finds a P free only if the node leaves one: give the
	// process a P per worker beyond its cores (GOMAXPROCS). Where the
	// class cannot be set the pacer logs it once and ticks the same way
	// at the process's priority. PreciseWake is then moot.
	Realtime int
}

func (c Config) withDefaults() (Config, error) {
	if c.Period < 0 || c.MinGap < 0 || c.MaxLag < 0 {
		return c, fmt.Errorf("negative duration in %+v: %w", c, ErrBadConfig)
	}
	if c.Period == 0 {
		c.Period = 20 * time.Millisecond
	}
	if c.MinGap == 0 {
		c.MinGap = c.Period / 4
	}
	if c.MaxLag == 0 {
		c.MaxLag = 5 * c.Period
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Workers < 0 || c.Workers > 256 {
		return c, fmt.Errorf("%d workers (1..256): %w", c.Workers, ErrBadConfig)
	}
	if c.Realtime < 0 || c.Realtime > 99 {
		return c, fmt.Errorf("realtime priority %d (1..99, 0 off): %w", c.Realtime, ErrBadConfig)
	}
	if c.MinGap > c.Period {
		return c, fmt.Errorf("min gap %v longer than period %v: %w", c.MinGap, c.Period, ErrBadConfig)
	}
	return c, nil
}

// Stats is a snapshot of a Pacer's counters and timing distributions.
// Lateness is how long after its scheduled time a tick started (with
// AlignSends: its last worker's sends); Cost is how long one tick's loop
// over all streams took, from its start (with AlignSends, ahead of its
// time) to its end. Quantiles are upper bucket
// edges, within 6.25% above the true value.
type Stats struct {
	Streams int    // streams registered now
	Ticks   uint64 // ticks run
	Skipped uint64 // ticks dropped because the backlog exceeded MaxLag
	Panics  uint64 // Ticks that panicked (each stream is then unregistered)
	LateP50 time.Duration
	LateP99 time.Duration
	LateMax time.Duration
	CostP50 time.Duration
	CostP99 time.Duration
	CostMax time.Duration
	// LateN, LateSum, CostN and CostSum are the count and the sum of the
	// recorded lateness and cost, which make each a summary on /metrics.
	LateN, CostN     uint64
	LateSum, CostSum time.Duration
}

// Pacer is the node-wide tick loop described in the package documentation.
// Create it with New and stop it with Close.
type Pacer struct {
	cfg Config
	log *slog.Logger

	// reg guards the handle tables and each shard's membership; a shard's
	// own mutex guards its dense slice while it ticks. Lock order: reg,
	// then a shard.
	reg     sync.Mutex
	pos     []int32  // slot -> dense index in its shard, -1 when free
	gen     []uint32 // slot -> generation of its current or last stream
	shardOf []uint16 // slot -> shard
	free    []uint32 // free slots
	closed  bool
	shards  []*shard  // worker w's share is shards[w]
	runners []*runner // one per worker: runners[0] is the clock goroutine's

	stop     chan struct{}
	done     chan struct{}
	tickDone chan struct{} // workers report the end of their share of a tick
	// doneKick, with the workers' kicks (Config.Realtime), wakes the clock's
	// thread when a worker has reported on tickDone.
	doneKick *kick
	workers  sync.WaitGroup
	once     sync.Once

	count   atomic.Int64
	ticks   atomic.Uint64
	skipped atomic.Uint64
	panics  atomic.Uint64
	late    histogram
	cost    histogram

	// align is Config.AlignSends with a Worker to hold the sends:
	// without one nothing would be held for the tick's time, so ticks
	// start on it.
	align bool
	timer *time.Timer // the clock's waits
	nudge *nudger     // behind timer's waits (PreciseWake); else nil
}

// shard is one worker's share of the streams.
type shard struct {
	mu      sync.Mutex
	streams []Stream     // dense: the tick loop's only input
	posts   []PostTicker // dense, beside streams: nil for a plain Stream
	pfs     []Prefetcher // dense, beside streams: nil for a stream that does not prefetch
	handles []Handle     // dense index -> its registration
	broken  []Handle     // streams whose Tick or PostTick panicked this tick
	run     *runner      // the worker that ticks it
}

// runner is one worker: the goroutine that ticks its shard, and what it
// keeps from tick to tick.
type runner struct {
	shard *shard
	wake  chan tickTimes
	// kick replaces wake with Config.Realtime: the tick is in next, or
	// closing is set.
	kick    *kick
	slot    tickTimes // next's target: a tick costs no allocation
	next    atomic.Pointer[tickTimes]
	closing atomic.Bool
	worker  Worker    // nil without Config.NewWorker
	handed  time.Time // when the last tick's AfterTicks began (AlignSends)
}

// tickTimes are one tick's start and the time its sends are due.
type tickTimes struct {
	now, send time.Time
}

// New starts a Pacer whose first tick is one Period from now, and its
// worker goroutines when Config.Workers asks for more than one. log
// receives only rare events (a panicking stream); nil means slog.Default().
func New(cfg Config, log *slog.Logger) (*Pacer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	p := &Pacer{
		cfg:      cfg,
		log:      log,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		tickDone: make(chan struct{}, cfg.Workers),
	}
	p.timer = time.NewTimer(time.Hour)
	p.timer.Stop()
	if cfg.PreciseWake {
		p.nudge = newNudger()
	}
	for i := range cfg.Workers {
		r := &runner{}
		if cfg.NewWorker != nil {
			r.worker = cfg.NewWorker(i)
		}
		r.shard = &shard{run: r}
		p.shards = append(p.shards, r.shard)
		p.runners = append(p.runners, r)
		p.align = p.align || cfg.AlignSends && r.worker != nil
	}
	if cfg.Workers > 1 && cfg.Realtime != 0 {
		p.makeKicks()
	}
	for _, r := range p.runners[1:] {
		r.wake = make(chan tickTimes, 1)
		p.workers.Add(1)
		go p.work(r)
	}
	go p.run()
	return p, nil
}

// makeKicks gives the clock and every other worker a kick (Config.Realtime),
// or none at all where eventfd fails: then the workers use channels.
func (p *Pacer) makeKicks() {
	p.doneKick = newKick()
	ok := p.doneKick != nil
	for _, r := range p.runners[1:] {
		if ok {
			r.kick = newKick()
			ok = r.kick != nil
		}
	}
	if ok {
		return
	}
	p.doneKick.close()
	p.doneKick = nil
	for _, r := range p.runners[1:] {
		r.kick.close()
		r.kick = nil
	}
}

// Register adds s to the tick loop, on the least loaded worker; its first
// Tick comes with the next tick. It returns ErrClosed after Close.
// Registering the same stream twice ticks it twice.
func (p *Pacer) Register(s Stream) (Handle, error) {
	p.reg.Lock()
	defer p.reg.Unlock()
	if p.closed {
		return Handle{}, ErrClosed
	}
	var slot uint32
	if n := len(p.free); n > 0 {
		slot = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		slot = uint32(len(p.pos))
		p.pos = append(p.pos, -1)
		p.gen = append(p.gen, 0)
		p.shardOf = append(p.shardOf, 0)
	}
	best := 0
	for i, sh := range p.shards {
		if len(sh.handles) < len(p.shards[best].handles) {
			best = i
		}
	}
	sh := p.shards[best]
	p.gen[slot]++
	h := Handle{slot: slot, gen: p.gen[slot]}
	sh.mu.Lock()
	p.pos[slot] = int32(len(sh.streams))
	p.shardOf[slot] = uint16(best)
	sh.streams = append(sh.streams, s)
	pt, _ := s.(PostTicker)
	sh.posts = append(sh.posts, pt)
	pf, _ := s.(Prefetcher)
	sh.pfs = append(sh.pfs, pf)
	sh.handles = append(sh.handles, h)
	sh.mu.Unlock()
	p.count.Add(1)
	return h, nil
}

// Unregister removes the stream registered under h. When it returns, that
// stream's Tick is not running and will not be called again, and what its
// Ticks left in the worker's Worker has gone out (Holder). Unregistering
// a handle twice, or the zero Handle, does nothing. It must not be called
// from inside a Tick.
func (p *Pacer) Unregister(h Handle) {
	p.reg.Lock()
	if !p.registered(h) {
		p.reg.Unlock()
		return
	}
	sh := p.shards[p.shardOf[h.slot]]
	sh.mu.Lock() // waits for the shard's tick in progress, if any
	defer sh.mu.Unlock()
	i := int(p.pos[h.slot])
	last := len(sh.streams) - 1
	if i != last {
		moved := sh.handles[last]
		sh.streams[i] = sh.streams[last]
		sh.posts[i] = sh.posts[last]
		sh.pfs[i] = sh.pfs[last]
		sh.handles[i] = moved
		p.pos[moved.slot] = int32(i)
	}
	sh.streams[last] = nil
	sh.posts[last] = nil
	sh.pfs[last] = nil
	sh.streams = sh.streams[:last]
	sh.posts = sh.posts[:last]
	sh.pfs = sh.pfs[:last]
	sh.handles = sh.handles[:last]
	p.pos[h.slot] = -1
	p.free = append(p.free, h.slot)
	p.count.Add(-1)
	// The wait for a Holder's sends (up to the lead) holds only the
	// share, not every other Register and Unregister of the node.
	p.reg.Unlock()
	if hd, ok := sh.run.worker.(Holder); ok {
		hd.Sent() // the sends of the stream's last tick, too
	}
}

// Worker returns the Worker (Config.NewWorker) of the worker that ticks
// the stream registered under h, or nil: no NewWorker, or h names no
// registered stream. Its stream's Ticks may start before Register's caller
// has asked, so a stream must cope with not knowing its Worker yet.
func (p *Pacer) Worker(h Handle) Worker {
	p.reg.Lock()
	defer p.reg.Unlock()
	if !p.registered(h) {
		return nil
	}
	return p.shards[p.shardOf[h.slot]].run.worker
}

// registered reports whether h names a stream registered now; p.reg is
// held.
func (p *Pacer) registered(h Handle) bool {
	return h.gen != 0 && int(h.slot) < len(p.pos) && p.gen[h.slot] == h.gen && p.pos[h.slot] >= 0
}

// Close stops the tick loop and the workers and waits for them, then
// closes the Workers that are io.Closers; no Tick runs after Close
// returns. Registered streams are dropped, not notified.
// Close is idempotent and always returns nil.
func (p *Pacer) Close() error {
	p.once.Do(func() {
		p.reg.Lock()
		p.closed = true
		p.reg.Unlock()
		close(p.stop)
	})
	<-p.done
	p.workers.Wait()
	return nil
}

// Stats returns the current counters and timing quantiles.
func (p *Pacer) Stats() Stats {
	return Stats{
		Streams: int(p.count.Load()),
		Ticks:   p.ticks.Load(),
		Skipped: p.skipped.Load(),
		Panics:  p.panics.Load(),
		LateP50: p.late.quantile(0.50),
		LateP99: p.late.quantile(0.99),
		LateMax: time.Duration(p.late.max.Load()),
		CostP50: p.cost.quantile(0.50),
		CostP99: p.cost.quantile(0.99),
		CostMax: time.Duration(p.cost.max.Load()),
		LateN:   p.late.n.Load(),
		LateSum: time.Duration(p.late.sum.Load()),
		CostN:   p.cost.n.Load(),
		CostSum: time.Duration(p.cost.sum.Load()),
	}
}

// Period returns the tick interval.
func (p *Pacer) Period() time.Duration {
	return p.cfg.Period
}

// fineWait is how long before a tick PreciseWake stops trusting the timer:
// the runtime's timer wakes up to a millisecond late; at most a quarter of
// the period (fine).
const fineWait = time.Millisecond

// fine is fineWait for this pacer's tick interval.
func (p *Pacer) fine() time.Duration {
	return min(fineWait, p.cfg.Period/4)
}

func (p *Pacer) run() {
	p.lockThread(0)
	defer func() {
		for _, r := range p.runners[1:] {
			if r.kick != nil {
				r.closing.Store(true)
				r.kick.signal()
			} else {
				close(r.wake)
			}
		}
		// Every tick waits for all its workers, so none is ticking; each
		// worker goroutine closes its own Worker on its way out.
		closeWorker(p.runners[0])
		p.nudge.close()
		if p.doneKick != nil {
			p.workers.Wait()
			p.doneKick.close()
		}
		close(p.done)
	}()
	period, minGap := p.cfg.Period, p.cfg.MinGap
	base := time.Now()
	last := base
	for n := int64(1); ; n++ {
		due := base.Add(time.Duration(n) * period)
		wake := due.Add(-p.lead())
		if g := last.Add(minGap); wake.Before(g) {
			wake = g
		}
		if !p.sleepUntil(wake) {
			return
		}
		now := time.Now()
		lag := now.Sub(due)
		if lag > p.cfg.MaxLag {
			k := int64(lag / period)
			n += k
			due = due.Add(time.Duration(k) * period)
			p.skipped.Add(uint64(k))
			lag -= time.Duration(k) * period
		}
		last = now
		p.tick(tickTimes{now: now, send: due})
		if p.align {
			// The tick started early on purpose: what is late or not
			// is its sends, which leave at due unless the latest
			// worker handed them over after it.
			lag = p.sendLag(due)
		}
		p.late.record(lag)
		p.ticks.Add(1)
		p.cost.record(time.Since(now))
	}
}

// sendLag is how long after due the tick's sends left: 0 unless the last
// of the workers with a Worker began its AfterTicks after due (they all
// reported the end of the tick).
func (p *Pacer) sendLag(due time.Time) time.Duration {
	var lag time.Duration
	for _, r := range p.runners {
		if r.worker != nil {
			lag = max(lag, r.handed.Sub(due))
		}
	}
	return lag
}

// lead is how long before its time AlignSends starts a tick: half a
// period, 0 without AlignSends or without a Worker.
func (p *Pacer) lead() time.Duration {
	if !p.align {
		return 0
	}
	return p.cfg.Period / 2
}

// tick runs one tick over every worker: the other workers' shares on their goroutines and the first share here, then waits for all
// of them.
func (p *Pacer) tick(t tickTimes) {
	for _, r := range p.runners[1:] {
		if r.kick != nil {
			r.slot = t
			r.next.Store(&r.slot)
			r.kick.signal()
		} else {
			r.wake <- t
		}
	}
	p.tickShard(p.runners[0], t)
	for range len(p.runners) - 1 {
		if p.doneKick != nil {
			p.doneKick.wait()
		}
		<-p.tickDone
	}
}

// work is a worker goroutine: one shard's loop per tick, until the clock
// goroutine closes its wake channel on its way out (so a tick in progress
// always completes).
func (p *Pacer) work(r *runner) {
	defer p.workers.Done()
	p.lockThread(1)
	if r.kick != nil {
		for r.kick.wait(); !r.closing.Load(); r.kick.wait() {
			p.tickShard(r, *r.next.Load())
			p.tickDone <- struct{}{}
			p.doneKick.signal()
		}
		r.kick.close()
	} else {
		for t := range r.wake {
			p.tickShard(r, t)
			p.tickDone <- struct{}{}
		}
	}
	closeWorker(r)
}

// lockThread gives the calling worker goroutine (the clock's: worker 0)
// an OS thread of its own in SCHED_FIFO (Config.Realtime), for good: the
// thread ends with the goroutine, so its class goes nowhere else.
func (p *Pacer) lockThread(worker int) {
	if p.cfg.Realtime == 0 {
		return
	}
	runtime.LockOSThread()
	if err := setThreadFIFO(p.cfg.Realtime); err != nil && worker == 0 {
		p.log.Warn("pace: ticking at the process's priority", "err", err)
	}
}

// closeWorker closes r's Worker if it is an io.Closer, on the goroutine
// that ticked it, under its share's lock (an Unregister at the same time
// may be asking a Holder for its sends).
func closeWorker(r *runner) {
	if c, ok := r.worker.(io.Closer); ok {
		r.shard.mu.Lock()
		defer r.shard.mu.Unlock()
		_ = c.Close()
	}
}

// tickShard is the per-period loop over a worker's shard: Tick on every stream, the worker's Worker, then PostTick on the
// PostTickers. It holds the shard's lock so that Unregister can promise
// that a removed stream is not ticking.
func (p *Pacer) tickShard(r *runner, t tickTimes) {
	now := t.now
	sh := r.shard
	sh.mu.Lock()
	streams := sh.streams
	reg := phase("pace.Ticks")
	pfs := sh.pfs
	if p.cfg.NoPrefetch {
		pfs = nil
	}
	for i := range streams {
		prefetchAhead(pfs, i, false)
		if !p.call(streams[i], now, false) {
			sh.broken = append(sh.broken, sh.handles[i])
		}
	}
	reg.End()
	if r.worker != nil {
		var send time.Time
		if p.align {
			send = t.send
			r.handed = time.Now()
		}
		reg = phase("pace.AfterTicks")
		p.afterTicks(r.worker, now, send)
		reg.End()
	}
	reg = phase("pace.PostTicks")
	for i, pt := range sh.posts {
		prefetchAhead(pfs, i, true)
		if pt != nil && !p.call(pt, now, true) {
			sh.broken = append(sh.broken, sh.handles[i])
		}
	}
	reg.End()
	sh.mu.Unlock()
	if len(sh.broken) == 0 {
		return
	}
	// Removed after the loop, with the lock order of Unregister; the
	// handles' generations make a concurrent Unregister harmless.
	for _, h := range sh.broken {
		p.Unregister(h)
	}
	sh.broken = sh.broken[:0]
}

// prefetchAhead gives the streams after i their prefetch stages before
// stream i runs: stage k to the stream PrefetchStages-k ahead.
func prefetchAhead(pfs []Prefetcher, i int, post bool) {
	for k := range PrefetchStages {
		if j := i + PrefetchStages - k; j < len(pfs) && pfs[j] != nil {
			pfs[j].Prefetch(k, post)
		}
	}
}

// phase marks a phase of a tick as a region of the runtime's execution
// trace (/debug/pprof/trace, go tool trace), so that a late tick shows
// which phase grew; without a trace running it costs a flag check.
func phase(name string) *trace.Region {
	return trace.StartRegion(context.Background(), name)
}

// sleepUntil returns true at t: on the clock's timer, the runtime's (the
// P is free for other goroutines), with PreciseWake only until fine before
// t and then on a nanosleep that keeps the P. The nudge (nil without
// PreciseWake or timerfd) is armed half of fine after the timer, as a
// backstop for when the GC's idle marking holds the P past the timer, and
// disarmed when the timer wins: the nanosleep absorbs the backstop's half.
// It returns false at once if Close stops the pacer first.
func (p *Pacer) sleepUntil(t time.Time) bool {
	stop, timer, nudge := p.stop, p.timer, p.nudge
	if p.cfg.Realtime != 0 {
		for {
			select {
			case <-stop:
				return false
			default:
			}
			d := time.Until(t)
			if d <= 0 {
				return true
			}
			kernelSleep(min(d, p.cfg.Period))
		}
	}
	precise := p.cfg.PreciseWake
	fine := p.fine()
	d := time.Until(t)
	if precise {
		d -= fine
	}
	if d > 0 {
		nudge.at(d + fine/2)
		timer.Reset(d)
		stopped := false
		select {
		case <-stop:
			stopped = true
		case <-timer.C:
		}
		nudge.disarm()
		if stopped {
			return false
		}
	} else {
		select {
		case <-stop:
			return false
		default:
		}
	}
	if precise {
		if r := time.Until(t); r > 0 {
			sleepHoldingP(r)
		}
	}
	return true
}

// afterTicks runs a Worker's AfterTicks; a panic is logged and counted
// like a stream's, and the Worker stays (it is no stream to unregister).
func (p *Pacer) afterTicks(w Worker, now, send time.Time) {
	defer func() {
		if r := recover(); r != nil {
			p.panics.Add(1)
			p.log.Error("pace: worker panicked in AfterTicks", "panic", fmt.Sprint(r), "worker", fmt.Sprintf("%T", w))
		}
	}()
	w.AfterTicks(now, send)
}

func (p *Pacer) call(s Stream, now time.Time, post bool) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			p.panics.Add(1)
			p.log.Error("pace: stream panicked in Tick or PostTick; unregistered", "panic", fmt.Sprint(r), "stream", fmt.Sprintf("%T", s))
		}
	}()
	if post {
		s.(PostTicker).PostTick(now)
	} else {
		s.Tick(now)
	}
	return true
}
