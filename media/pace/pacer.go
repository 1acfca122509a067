package pace

import (
	"fmt"
	"log/slog"
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

// Handle names one registration, for Unregister. The zero Handle names
// nothing.
type Handle struct {
	slot uint32
	gen  uint32
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
	if c.MinGap > c.Period {
		return c, fmt.Errorf("min gap %v longer than period %v: %w", c.MinGap, c.Period, ErrBadConfig)
	}
	return c, nil
}

// Stats is a snapshot of a Pacer's counters and timing distributions.
// Lateness is how long after its scheduled time a tick started; Cost is how
// long one tick's loop over all streams took. Quantiles are upper bucket
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
}

// Pacer is the node-wide tick loop described in the package documentation.
// Create it with New and stop it with Close.
type Pacer struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	streams []Stream // dense: the tick loop's only input
	slotOf  []uint32 // dense index -> slot
	pos     []int32  // slot -> dense index, -1 when free
	gen     []uint32 // slot -> generation of its current or last stream
	free    []uint32 // free slots
	broken  []int    // dense indexes whose Tick panicked this tick
	closed  bool

	stop chan struct{}
	done chan struct{}
	once sync.Once

	count   atomic.Int64
	ticks   atomic.Uint64
	skipped atomic.Uint64
	panics  atomic.Uint64
	late    histogram
	cost    histogram
}

// New starts a Pacer whose first tick is one Period from now. log receives
// only rare events (a panicking stream); nil means slog.Default().
func New(cfg Config, log *slog.Logger) (*Pacer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	p := &Pacer{
		cfg:  cfg,
		log:  log,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go p.run()
	return p, nil
}

// Register adds s to the tick loop; its first Tick comes with the next tick.
// It returns ErrClosed after Close. Registering the same stream twice ticks
// it twice.
func (p *Pacer) Register(s Stream) (Handle, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	}
	p.gen[slot]++
	p.pos[slot] = int32(len(p.streams))
	p.streams = append(p.streams, s)
	p.slotOf = append(p.slotOf, slot)
	p.count.Add(1)
	return Handle{slot: slot, gen: p.gen[slot]}, nil
}

// Unregister removes the stream registered under h. When it returns, that
// stream's Tick is not running and will not be called again. Unregistering
// a handle twice, or the zero Handle, does nothing. It must not be called
// from inside a Tick.
func (p *Pacer) Unregister(h Handle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.remove(h)
}

func (p *Pacer) remove(h Handle) {
	if h.gen == 0 || int(h.slot) >= len(p.pos) || p.gen[h.slot] != h.gen || p.pos[h.slot] < 0 {
		return
	}
	i := int(p.pos[h.slot])
	last := len(p.streams) - 1
	if i != last {
		moved := p.slotOf[last]
		p.streams[i] = p.streams[last]
		p.slotOf[i] = moved
		p.pos[moved] = int32(i)
	}
	p.streams[last] = nil
	p.streams = p.streams[:last]
	p.slotOf = p.slotOf[:last]
	p.pos[h.slot] = -1
	p.free = append(p.free, h.slot)
	p.count.Add(-1)
}

// Close stops the tick loop and waits for it; no Tick runs after Close
// returns. Registered streams are dropped, not notified. Close is
// idempotent and always returns nil.
func (p *Pacer) Close() error {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		close(p.stop)
	})
	<-p.done
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
	}
}

// Period returns the tick interval.
func (p *Pacer) Period() time.Duration {
	return p.cfg.Period
}

func (p *Pacer) run() {
	defer close(p.done)
	period := p.cfg.Period
	timer := time.NewTimer(period)
	defer timer.Stop()
	base := time.Now()
	last := base
	for n := int64(1); ; n++ {
		due := base.Add(time.Duration(n) * period)
		wake := due
		if g := last.Add(p.cfg.MinGap); wake.Before(g) {
			wake = g
		}
		now := time.Now()
		if d := wake.Sub(now); d > 0 {
			timer.Reset(d)
			select {
			case <-p.stop:
				return
			case <-timer.C:
			}
			now = time.Now()
		} else {
			select {
			case <-p.stop:
				return
			default:
			}
		}
		lag := now.Sub(due)
		if lag > p.cfg.MaxLag {
			k := int64(lag / period)
			n += k
			p.skipped.Add(uint64(k))
			lag -= time.Duration(k) * period
		}
		p.late.record(lag)
		last = now
		p.tick(now)
		p.ticks.Add(1)
		p.cost.record(time.Since(now))
	}
}

// tick is the per-period loop. It holds mu so that Unregister can promise
// that a removed stream is not ticking.
func (p *Pacer) tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	streams := p.streams
	for i := range streams {
		if !p.call(streams[i], now) {
			p.broken = append(p.broken, i)
		}
	}
	if len(p.broken) == 0 {
		return
	}
	// Remove from the highest index down so swaps never move a broken
	// stream that is still to be removed.
	for j := len(p.broken) - 1; j >= 0; j-- {
		i := p.broken[j]
		slot := p.slotOf[i]
		p.remove(Handle{slot: slot, gen: p.gen[slot]})
	}
	p.broken = p.broken[:0]
}

func (p *Pacer) call(s Stream, now time.Time) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			p.panics.Add(1)
			p.log.Error("pace: stream panicked in Tick; unregistered", "panic", fmt.Sprint(r), "stream", fmt.Sprintf("%T", s))
		}
	}()
	s.Tick(now)
	return true
}
