package cluster

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/voiced/voiced/storage/coord"
)

// HeartbeatEvery is how often a media node reports itself to the
// registry (coord.Registry's contract).
const HeartbeatEvery = time.Second

// Announcer keeps a media node in the coord registry: its ID, address,
// live calls, CPU and draining flag, every HeartbeatEvery until Leave.
type Announcer struct {
	reg      coord.Registry
	id, addr string
	calls    func() int
	log      *slog.Logger
	draining atomic.Bool
	cpu      cpuSampler
}

// NewAnnouncer returns the announcer of node id, reached at addr, whose
// live calls calls counts. SetDraining marks it draining from its next
// heartbeat on.
func NewAnnouncer(reg coord.Registry, id, addr string, calls func() int, log *slog.Logger) *Announcer {
	return &Announcer{reg: reg, id: id, addr: addr, calls: calls, log: log, cpu: newCPUSampler()}
}

// Run heartbeats until ctx ends; the first one before it returns an
// error, so a node that cannot reach the registry does not start.
func (a *Announcer) Run(ctx context.Context) error {
	if err := a.beat(ctx); err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := a.beat(ctx); err != nil && ctx.Err() == nil {
					a.log.Warn("registry heartbeat failed", "err", err)
				}
			}
		}
	}()
	return nil
}

// SetDraining sets the draining flag the next heartbeats carry.
func (a *Announcer) SetDraining(on bool) { a.draining.Store(on) }

// Leave takes the node out of the registry at once (clean shutdown).
func (a *Announcer) Leave(ctx context.Context) error { return a.reg.Leave(ctx, a.id) }

func (a *Announcer) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, HeartbeatEvery)
	defer cancel()
	return a.reg.Heartbeat(ctx, coord.Node{ID: a.id, Addr: a.addr, Calls: a.calls(), CPU: a.cpu.sample(), Draining: a.draining.Load()})
}

// cpuSampler measures the process's CPU use between samples as a
// fraction of the machine's cores.
type cpuSampler struct {
	last     time.Time
	lastUsed time.Duration
}

func newCPUSampler() cpuSampler { return cpuSampler{last: time.Now(), lastUsed: processCPU()} }

func (s *cpuSampler) sample() float64 {
	now, used := time.Now(), processCPU()
	wall := now.Sub(s.last)
	frac := 0.0
	if wall > 0 {
		frac = float64(used-s.lastUsed) / float64(wall) / float64(runtime.NumCPU())
	}
	s.last, s.lastUsed = now, used
	return min(max(frac, 0), 1)
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
