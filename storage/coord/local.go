package coord

import (
	"sync"
	"time"
)

// sweepEvery is how often, at most, a Local drops expired keys and dead nodes while
// serving calls; between sweeps expired entries are ignored where they are read.
const sweepEvery = time.Minute

// Local is the in-process [Coordinator] for the all-in-one shape: one process holds the
// registry, streams, counters and locks in memory. It is safe for concurrent use. It has
// no background goroutine of its own: expired entries are swept while serving calls, and
// the only goroutines are those of command subscriptions, which Close ends and waits for.
// Nothing survives a restart, which is what the all-in-one shape needs: the media nodes
// and the control plane live and die together.
type Local struct {
	cfg Config

	mu        sync.Mutex
	closed    bool
	closing   chan struct{} // closed by Close: wakes blocked reads, ends subscriptions
	subsWG    sync.WaitGroup
	lastSweep time.Time

	nodes    map[string]Node
	subs     map[string]map[*localSub]struct{}
	streams  map[string]*localStream
	counters map[string]localCounter
	logs     map[string]*localLog
	sems     map[string]map[string]time.Time
	locks    map[string]localLock
}

var _ Coordinator = (*Local)(nil)

// NewLocal returns an in-process coordinator with cfg's zero fields defaulted.
func NewLocal(cfg Config) *Local {
	cfg = cfg.WithDefaults()
	return &Local{
		cfg:       cfg,
		closing:   make(chan struct{}),
		lastSweep: cfg.Now(),
		nodes:     make(map[string]Node),
		subs:      make(map[string]map[*localSub]struct{}),
		streams:   make(map[string]*localStream),
		counters:  make(map[string]localCounter),
		logs:      make(map[string]*localLog),
		sems:      make(map[string]map[string]time.Time),
		locks:     make(map[string]localLock),
	}
}

// Close ends every command subscription and waits for their goroutines, wakes blocked
// reads, and makes every later call return [ErrClosed]. It is idempotent.
func (l *Local) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.closing)
	}
	l.mu.Unlock()
	l.subsWG.Wait()
	return nil
}

// begin locks l for one operation and returns the operation's time, or ErrClosed.
// It sweeps expired entries when the last sweep is older than sweepEvery.
func (l *Local) begin() (time.Time, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return time.Time{}, ErrClosed
	}
	now := l.cfg.Now()
	if now.Sub(l.lastSweep) >= sweepEvery {
		l.sweepLocked(now)
		l.lastSweep = now
	}
	return now, nil
}

// sweepLocked drops dead nodes and expired counters, rate logs, leases and locks, so
// keys that are never touched again do not accumulate.
func (l *Local) sweepLocked(now time.Time) {
	for id, n := range l.nodes {
		if !l.liveLocked(n, now) {
			delete(l.nodes, id)
		}
	}
	for k, c := range l.counters {
		if c.expired(now) {
			delete(l.counters, k)
		}
	}
	for k, lg := range l.logs {
		if lg.trim(now); len(lg.at) == 0 {
			delete(l.logs, k)
		}
	}
	for k, leases := range l.sems {
		trimLeases(leases, now)
		if len(leases) == 0 {
			delete(l.sems, k)
		}
	}
	for k, lk := range l.locks {
		if !now.Before(lk.exp) {
			delete(l.locks, k)
		}
	}
}
