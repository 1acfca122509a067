package load

import "sync/atomic"

// queueLen is how many frames the pacer may run ahead of a session's
// writer (about 1.3 s); beyond it frames are dropped and counted.
const queueLen = 64

// FrameQueue hands source frame indexes from the pacer to a media
// session's writer goroutine: a single-producer, single-consumer ring,
// so the pacer never blocks or allocates, plus a one-slot wake-up.
type FrameQueue struct {
	ring   [queueLen]int32
	head   atomic.Uint64 // written by the producer (the pacer)
	tail   atomic.Uint64 // written by the consumer (the writer)
	notify chan struct{}
	drops  atomic.Uint64
}

// NewFrameQueue returns an empty queue.
func NewFrameQueue() *FrameQueue { return &FrameQueue{notify: make(chan struct{}, 1)} }

// Push queues frame and wakes the writer; when the queue is full the frame
// is dropped, counted, and false returned.
func (q *FrameQueue) Push(frame int) bool {
	h := q.head.Load()
	if h-q.tail.Load() >= queueLen {
		q.drops.Add(1)
		return false
	}
	q.ring[h%queueLen] = int32(frame)
	q.head.Store(h + 1)
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return true
}

// Ready is signalled after Push; the writer then Pops until empty.
func (q *FrameQueue) Ready() <-chan struct{} { return q.notify }

// Pop takes the oldest frame, or returns false when the queue is empty.
func (q *FrameQueue) Pop() (int, bool) {
	t := q.tail.Load()
	if t == q.head.Load() {
		return 0, false
	}
	f := int(q.ring[t%queueLen])
	q.tail.Store(t + 1)
	return f, true
}

// Dropped returns how many frames found the queue full.
func (q *FrameQueue) Dropped() uint64 { return q.drops.Load() }
