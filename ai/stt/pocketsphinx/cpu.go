package pocketsphinx

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The decoder's C code (loading a model, decoding, ending an utterance,
// freeing) runs on a few threads of its own at a lower CPU priority, never
// on the calling goroutine's thread. A cgo call gives its P back to the Go
// scheduler, so GOMAXPROCS does not bound how many threads run C at once:
// with the pool's 16 decoders on a 2-core node, 16 threads decoding at
// the kernel's normal priority shared the cores with the thread of the
// media pacer, whose 20 ms ticks then started tens of milliseconds late
// (50 simulated calls with the offline engine: pacer lateness p99 90-102
// ms). On decodeThreads threads at nice decodeNice, the decoding takes the
// same CPU time but yields to the pacer and the rest of the node whenever
// they have work (docs/decisions.md, "Offline decoding yields to the
// pacer").

// decodeNice is the niceness of the decoding threads (Linux; elsewhere
// they run at the process's priority): at 10 the kernel gives a thread
// at 0 about ten times their share and runs it first when it wakes.
const decodeNice = 10

// direct runs the C code on the caller's thread, as before the decoding
// threads (for the comparisons in the tests).
var direct atomic.Bool

type decodeJob struct {
	f    func()
	done chan struct{}
}

var jobPool = sync.Pool{New: func() any { return &decodeJob{done: make(chan struct{}, 1)} }}

// decodeThreads returns the queue of the decoding threads, starting them
// at the first call: decodeThreadCount of them.
var decodeThreads = sync.OnceValue(func() chan *decodeJob {
	n := decodeThreadCount()
	q := make(chan *decodeJob, n)
	for range n {
		go decodeThread(q)
	}
	return q
})

// decodeThreadCount is one decoding thread per P (runtime.GOMAXPROCS at
// the first call), so the decoding can still use every core the node
// leaves idle, but never more than the cores: a thread in C keeps its P
// until sysmon takes it back, and the realtime pacer's Ps beyond the cores
// (call.Phone doubles GOMAXPROCS) must stay free for its workers. With a
// thread per P there, 50 simulated calls paced up to 2.1x worse and 10
// offline realtime sessions answered slower, 7 turns of 60 without a
// transcript (docs/decisions.md, "Pacer wake-ups without the Go
// scheduler").
func decodeThreadCount() int { return min(runtime.GOMAXPROCS(0), runtime.NumCPU()) }

// decodeThread runs jobs for good on a thread of its own (locked, so no
// other goroutine runs at its priority, and the thread dies with it).
func decodeThread(q chan *decodeJob) {
	runtime.LockOSThread()
	lowerPriority()
	for j := range q {
		j.f()
		j.done <- struct{}{}
	}
}

// onDecodeThread runs f, which calls the decoder's C code, on a decoding
// thread and returns when it has run. The caller's goroutine waits
// without holding a thread.
func onDecodeThread(f func()) {
	if direct.Load() {
		f()
		return
	}
	j := jobPool.Get().(*decodeJob)
	j.f = f
	decodeThreads() <- j
	<-j.done
	j.f = nil
	jobPool.Put(j)
}
