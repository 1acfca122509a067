package agent

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Recorders writes the recordings of many sessions (Config.RecordPath) to
// their files, so that neither the pacer nor an input goroutine waits for
// the disk. A goroutine per recording waking every 100 ms cost a wake-up
// per call ten times a second (about 3% of the node's CPU at 300 calls:
// bench/RESULTS-voicebench.md); instead the recordings are spread over
// shards, one per CPU by default, and each shard's writer writes all its
// recordings' full chunks in one wake-up. A shard's writer runs only while
// the shard has recordings. A call may have recMaxReady chunks waiting,
// so a slow write to one call's file delays the shard's other calls
// without losing their samples unless it takes seconds. It also keeps the
// chunks its writers have written, for the recordings to fill again.
//
// A node makes one with NewRecorders, hands it to every session
// (Deps.Recorders) and closes it after the last session closed; a session
// without one makes its own. Its methods are safe for concurrent use.
type Recorders struct {
	shards []*recShard
	next   atomic.Uint32
	chunks chunkPool

	// mu guards closed and the start of writers (wg.Add), so that Close
	// waits for every writer ever started.
	mu     sync.Mutex
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// recShard is one writer's share of the recordings.
type recShard struct {
	w       *Recorders
	mu      sync.Mutex
	recs    []*recorder
	running bool        // its writer is running (or about to stop)
	batch   []*recorder // the writer's copy of recs, reused
}

// NewRecorders returns Recorders with writers shards; 0 means one per
// CPU (runtime.GOMAXPROCS). No goroutine runs until a recording starts.
func NewRecorders(writers int) *Recorders {
	if writers <= 0 {
		writers = runtime.GOMAXPROCS(0)
	}
	w := &Recorders{shards: make([]*recShard, writers), stop: make(chan struct{})}
	for i := range w.shards {
		w.shards[i] = &recShard{w: w}
	}
	return w
}

// Close stops the writers and waits for them; each writes what its
// recordings have ready first. A recording still open after that writes
// the rest at its own close (up to recMaxReady chunks ahead; beyond them
// its close reports the loss). No recording can start after Close
// (ErrRecordersClosed). Close is idempotent and always returns nil.
func (w *Recorders) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
	return nil
}

// add puts r on the next shard and starts its writer if it is not running.
func (w *Recorders) add(r *recorder) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrRecordersClosed
	}
	sh := w.shards[int(w.next.Add(1)-1)%len(w.shards)]
	r.sh = sh
	sh.mu.Lock()
	sh.recs = append(sh.recs, r)
	start := !sh.running
	sh.running = true
	sh.mu.Unlock()
	if start {
		w.wg.Add(1)
		go w.write(sh)
	}
	return nil
}

// remove takes r off the shard; the writer may still be writing for it.
func (sh *recShard) remove(r *recorder) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i, x := range sh.recs {
		if x == r {
			last := len(sh.recs) - 1
			sh.recs[i] = sh.recs[last]
			sh.recs[last] = nil
			sh.recs = sh.recs[:last]
			return
		}
	}
}

// write is sh's writer: every recDrainEvery it writes its recordings'
// full chunks, until the shard has none or Close stops it (after one last
// round).
func (w *Recorders) write(sh *recShard) {
	defer w.wg.Done()
	t := time.NewTicker(recDrainEvery)
	defer t.Stop()
	for {
		stop := false
		select {
		case <-t.C:
		case <-w.stop:
			stop = true
		}
		if !sh.drain() || stop {
			return
		}
	}
}

// drain writes the full chunks of the shard's recordings, yielding as
// recYieldEvery says; false (and the writer stops) when it has none.
func (sh *recShard) drain() bool {
	sh.mu.Lock()
	if len(sh.recs) == 0 {
		sh.running = false
		sh.mu.Unlock()
		return false
	}
	sh.batch = append(sh.batch[:0], sh.recs...)
	sh.mu.Unlock()
	for i, r := range sh.batch {
		wrote := r.flush()
		sh.batch[i] = nil
		if wrote || i%recYieldEvery == recYieldEvery-1 {
			runtime.Gosched()
		}
	}
	return true
}

// recDrainEvery is how often a shard's writer writes its recorders' full
// chunks.
const recDrainEvery = 100 * time.Millisecond

// recYieldEvery is how many recorders a shard visits before it lets other
// goroutines run, so that with one P (a node pinned to one core) the
// pacer's tick does not wait for a whole batch. The shard also yields after
// every recorder it wrote for: a goroutine in a system call keeps its P
// until the runtime's monitor takes it back, which can be 10 ms later,
// and a 64 KB write(2) of new page-cache pages took 0.3 ms on a VM node
// at 345 calls (20 µs on an idle one: likely fresh pages faulting in the
// hypervisor, not measured), so the ten writes of one batch held the
// pacer's tick back 3.4 ms (runtime/trace; p99 tick lateness 5.6 ms).
const recYieldEvery = 64

// chunkPool keeps the chunks the writers have written, for the calls to
// fill again: a fresh chunk costs page faults (on a VM with free page
// reporting, a host fault a page: see dropWritten), a reused one none.
type chunkPool struct {
	mu   sync.Mutex
	free [][]byte
}

// recMaxFree bounds the pool (64 MB): a node that ran 1,000 calls keeps
// that many chunks, and after a peak the rest go to the GC.
const recMaxFree = 1024

func (p *chunkPool) get() []byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return c[:0]
	}
	p.mu.Unlock()
	return make([]byte, 0, recChunk)
}

func (p *chunkPool) put(cs ...[]byte) {
	p.mu.Lock()
	for _, c := range cs {
		if len(p.free) < recMaxFree {
			p.free = append(p.free, c)
		}
	}
	p.mu.Unlock()
}
