package agent

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
)

// recorder writes a call as a stereo WAV, the caller on the left, the
// agent on the right, at 16 kHz, or at the call's own rate when that is
// lower (8 kHz for G.711: the telephone band needs no more, and the file
// and its write-out are half the size). The pacer's side (ReadFrame) puts one agent
// frame per tick (silence too) into one ring, the input side the caller's
// frames into another, and a writer goroutine shared by many calls (see
// recWriter) pairs them every 100 ms and writes the file, so neither the
// pacer nor the receive loop waits for the disk. The agent's ticks are the clock: each agent frame is
// paired with the next caller frame, or with silence when none came within
// 200 ms (a caller who sends nothing, as in text sessions); caller audio
// that arrives faster than real time is written with agent silence once
// more than half a second of it waits.
type recorder struct {
	f      *os.File
	bf     *bufferedFile
	w      *wav.Writer
	agent  *media.Ring // agent frames at rate, from the pacer
	caller *media.Ring // caller frames at the file's rate, from the input side
	// rs brings agent frames to the file's rate (drain side), crs caller
	// frames (input side, before the ring, which for an 8 kHz file then
	// holds half as much memory per second); nil where the rate is the
	// file's already.
	rs     *resample.Resampler
	crs    *resample.Resampler
	crsErr atomic.Pointer[error] // crs's first error, for drain to report
	rate   int
	zero   []int16 // a silent agent frame at rate, for ticks without speech
	aFrame []int16
	a16    []int16 // agent frame at the file's rate
	cFrame []int16 // caller frame at the file's rate (drain side)
	cIn    []int16 // caller frame at the file's rate (input side)
	stereo []int16
	sh     *recShard
	// mu serialises the rings' consumer side and the file between the
	// shard's periodic drain and close's last one; err and stopped are
	// under it too.
	mu      sync.Mutex
	err     error
	stopped bool
}

// bufferedFile buffers writes to a file and flushes before seeking, so the
// WAV writer's per-frame writes become a few large ones, which fw makes
// and counts.
type bufferedFile struct {
	bw *bufio.Writer
	fw fileWrites
}

// fileWrites passes writes to f and counts them: each is a write(2),
// which the shard writer yields after (recShard.run). After each write it
// asks the kernel to start writing the new bytes out and to drop the pages
// of the write before from the page cache (dropWritten), which by then
// are on disk: a recording is written once and read rarely, if ever, by
// this node, so its pages would only push other files out of the cache,
// and taking fresh pages costs more than reusing freed ones (on a VM that
// hands freed memory back to its host, 12 µs a page against 3: see
// docs/decisions.md).
type fileWrites struct {
	f    *os.File
	n    int
	off  int64 // bytes written at the end of the file
	prev int64 // where the write before the last one began
}

func (w *fileWrites) Write(p []byte) (int, error) {
	w.n++
	at := w.off
	k, err := w.f.Write(p)
	w.off += int64(k)
	if k > 0 {
		dropWritten(w.f, w.prev, w.off)
		w.prev = at
	}
	return k, err
}

func (b *bufferedFile) Write(p []byte) (int, error) { return b.bw.Write(p) }

func (b *bufferedFile) Seek(off int64, whence int) (int64, error) {
	if err := b.bw.Flush(); err != nil {
		return 0, err
	}
	n, err := b.fw.f.Seek(off, whence)
	if err == nil {
		b.fw.off = n
		b.fw.prev = min(b.fw.prev, n)
	}
	return n, err
}

// newRecorder creates the file and hands the recorder to a shard's writer:
// agent frames at rate, caller frames at inRate.
func newRecorder(path string, rate, inRate int) (*recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("agent: recording directory: %w", err)
	}
	fileRate := min(rate, media.Rate16k)
	n, fn := media.SamplesPerFrame(rate), media.SamplesPerFrame(fileRate)
	r := &recorder{rate: rate, zero: make([]int16, n), aFrame: make([]int16, n), a16: make([]int16, fn),
		cFrame: make([]int16, fn), cIn: make([]int16, fn), stereo: make([]int16, 2*fn)}
	var err error
	if rate != fileRate {
		r.rs, err = resample.New(rate, fileRate, resample.QualityHigh)
	}
	if err == nil && inRate != fileRate {
		// For a 16 kHz input and an 8 kHz file the caller's audio came
		// from 8 kHz; QualityLow keeps its band (0.40 of 8 kHz is 3.2 kHz,
		// with G.711's 3.4 kHz edge rolled off, not aliased).
		r.crs, err = resample.New(inRate, fileRate, resample.QualityLow)
	}
	if err != nil {
		return nil, fmt.Errorf("agent: recording resampler: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		r.closeResamplers()
		return nil, fmt.Errorf("agent: recording: %w", err)
	}
	bf := &bufferedFile{fw: fileWrites{f: f}}
	bf.bw = bufio.NewWriterSize(&bf.fw, 64<<10)
	w, err := wav.NewWriter(bf, wav.Format{Encoding: wav.PCM16, SampleRate: fileRate, Channels: 2})
	if err != nil {
		f.Close()
		r.closeResamplers()
		return nil, fmt.Errorf("agent: recording: %w", err)
	}
	r.f, r.bf, r.w = f, bf, w
	// Two seconds each (recWriter). The caller's ring held 4 s at 16 kHz
	// (128 KB a call) before it took the file's rate; at 2 s, 8 kHz for
	// G.711, a call's two rings take 64 KB instead of 160.
	r.agent, _ = media.NewRing(2 * rate)
	r.caller, _ = media.NewRing(2 * fileRate)
	recWriter.add(r)
	return r, nil
}

// tick records the agent's frame of this tick (nil: silent). Pacer side;
// it allocates nothing.
func (r *recorder) tick(frame []int16) {
	if frame == nil {
		frame = r.zero
	}
	r.agent.Write(frame)
}

// callerFrame records one caller frame: pcm at the input rate, or decoded
// when it is at the file's rate (a G.711 call's frame as decoded, which
// needs no resampler). Input side.
func (r *recorder) callerFrame(pcm, decoded []int16) {
	if r.crs == nil {
		r.caller.Write(pcm)
		return
	}
	if len(decoded) == len(r.cIn) {
		r.caller.Write(decoded)
		return
	}
	if k, err := r.crs.ProcessTo(r.cIn, pcm); err != nil || k != len(r.cIn) {
		if err == nil {
			err = fmt.Errorf("%d samples out, not %d", k, len(r.cIn))
		}
		r.crsErr.CompareAndSwap(nil, &err)
		clear(r.cIn)
	}
	r.caller.Write(r.cIn)
}

// recDrainEvery is how often a shard's writer drains its recorders.
const recDrainEvery = 100 * time.Millisecond

// recYieldEvery is how many recorders a shard drains before it lets
// other goroutines run: a drain takes about 3.5 µs per call
// (BenchmarkRecorderDrain), so a batch of 1000 calls would otherwise hold
// its P for some 3.5 ms, and with one P (a node pinned to one core) the
// pacer's tick would wait that long. The shard also yields after every
// drain that wrote to its file: a goroutine in a system call keeps its P
// until the runtime's monitor takes it back, which can be 10 ms later,
// and a 64 KB write(2) of new page-cache pages took 0.3 ms on a VM node
// at 345 calls (20 µs on an idle one: likely fresh pages faulting in the
// hypervisor, not measured), so the ten writes of one batch held the
// pacer's tick back 3.4 ms (runtime/trace; p99 tick lateness 5.6 ms).
const recYieldEvery = 64

// recWriter writes every call's recording of the process. A goroutine per
// recorder waking every 100 ms cost a wake-up per call ten times a second
// (about 3% of the node's CPU at 300 calls, beside the drains' own 8%:
// bench/RESULTS-voicebench.md); instead the recorders are spread over one shard per CPU,
// and each shard's goroutine drains all its recorders in one wake-up. A
// shard's goroutine runs only while it has recorders. The rings hold 2 s
// each, so a slow write to one call's file delays the shard's other calls
// without losing their samples unless it takes seconds.
var recWriter recShards

type recShards struct {
	once   sync.Once
	shards []*recShard
	next   atomic.Uint32
}

type recShard struct {
	mu      sync.Mutex
	recs    []*recorder
	running bool
	batch   []*recorder // the writer's copy of recs, reused
}

func (w *recShards) add(r *recorder) {
	w.once.Do(func() {
		n := runtime.GOMAXPROCS(0)
		w.shards = make([]*recShard, n)
		for i := range w.shards {
			w.shards[i] = &recShard{}
		}
	})
	sh := w.shards[int(w.next.Add(1)-1)%len(w.shards)]
	r.sh = sh
	sh.mu.Lock()
	sh.recs = append(sh.recs, r)
	if !sh.running {
		sh.running = true
		go sh.run()
	}
	sh.mu.Unlock()
}

// remove takes r off the shard; the writer may still be draining it.
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

func (sh *recShard) run() {
	t := time.NewTicker(recDrainEvery)
	defer t.Stop()
	for range t.C {
		sh.mu.Lock()
		if len(sh.recs) == 0 {
			sh.running = false
			sh.mu.Unlock()
			return
		}
		sh.batch = append(sh.batch[:0], sh.recs...)
		sh.mu.Unlock()
		for i, r := range sh.batch {
			r.mu.Lock()
			wrote := false
			if !r.stopped {
				n := r.bf.fw.n
				r.drain(false)
				wrote = r.bf.fw.n != n
			}
			r.mu.Unlock()
			sh.batch[i] = nil
			if wrote || i%recYieldEvery == recYieldEvery-1 {
				runtime.Gosched()
			}
		}
	}
}

// drain writes what the rings hold; at the end everything. Otherwise an
// agent frame waits for its caller frame up to 200 ms (network jitter)
// before it is written against silence, and caller audio waits for its
// agent frame unless more than half a second piles up.
func (r *recorder) drain(final bool) {
	if e := r.crsErr.Load(); e != nil && r.err == nil {
		r.err = fmt.Errorf("agent: recording resampler: %v", *e)
	}
	n, cn := len(r.aFrame), len(r.cFrame)
	for r.err == nil && r.agent.Len() >= n {
		haveCaller := r.caller.Len() >= cn
		if !haveCaller && !final && r.agent.Len() <= 10*n {
			break
		}
		r.agent.ReadFull(r.aFrame)
		a := r.aFrame
		if r.rs != nil {
			if k, err := r.rs.ProcessTo(r.a16, r.aFrame); err != nil || k != len(r.a16) {
				r.err = fmt.Errorf("agent: recording resampler: %v", err)
				return
			}
			a = r.a16
		}
		if !haveCaller || !r.caller.ReadFull(r.cFrame) {
			clear(r.cFrame)
		}
		r.write(r.cFrame, a)
	}
	limit := 25 * cn
	if final {
		limit = 0
	}
	for r.err == nil && r.caller.Len() > limit && r.caller.ReadFull(r.cFrame) {
		r.write(r.cFrame, nil)
	}
}

func (r *recorder) closeResamplers() {
	if r.rs != nil {
		r.rs.Close()
	}
	if r.crs != nil {
		r.crs.Close()
	}
}

func (r *recorder) write(caller, agent []int16) {
	for i, v := range caller {
		r.stereo[2*i] = v
		if agent != nil {
			r.stereo[2*i+1] = agent[i]
		} else {
			r.stereo[2*i+1] = 0
		}
	}
	r.err = r.w.WriteSamples(r.stereo)
}

// close takes the recorder off its shard, drains what is left and finishes
// the file. The pacer and the input side must have stopped.
func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	r.sh.remove(r)
	r.drain(true)
	r.closeResamplers()
	err := r.w.Close()
	if _, serr := r.bf.Seek(0, io.SeekCurrent); err == nil {
		err = serr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if r.err != nil {
		return r.err
	}
	return err
}
