package media

import (
	"fmt"
	"sync/atomic"

	"github.com/voiced/voiced/media/prefetch"
)

// Ring is a fixed-capacity FIFO of samples between one producer and one
// consumer, typically a TTS or decoder goroutine writing chunks of any size
// and the pacer reading exact 20 ms frames with ReadFull.
//
// Concurrency: single producer, single consumer, lock-free. At most one
// goroutine at a time calls Write (the producer side) and at most one calls
// Read, ReadFull, Peek, Discard or Reset (the consumer side); Len, Free and Cap
// may be called from either. The two sides hand data over through atomic
// positions, so a sample written before Write returns is visible to the
// consumer's next read. Using more than one goroutine per side needs
// external locking.
//
// A Ring allocates only in NewRing.
type Ring struct {
	buf []int16
	// read and write count samples since creation; they only grow, and
	// write-read is the number of samples buffered. Only the consumer
	// stores read and only the producer stores write.
	read  atomic.Uint64
	write atomic.Uint64
}

// NewRing returns an empty ring holding up to capacity samples.
func NewRing(capacity int) (*Ring, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("%d samples: %w", capacity, ErrRingCapacity)
	}
	return &Ring{buf: make([]int16, capacity)}, nil
}

// Cap returns the capacity in samples.
func (r *Ring) Cap() int {
	return len(r.buf)
}

// Len returns the number of samples ready to read. From the producer side
// it is an upper bound, as the consumer may read meanwhile.
func (r *Ring) Len() int {
	return int(r.write.Load() - r.read.Load())
}

// Free returns the room left for writing. From the consumer side it is a
// lower bound, as the producer may write meanwhile.
func (r *Ring) Free() int {
	return len(r.buf) - r.Len()
}

// Write appends as many samples of p as fit and returns how many it took;
// fewer than len(p) means the ring is full and the caller keeps the rest.
// Producer side.
func (r *Ring) Write(p []int16) int {
	w := r.write.Load()
	n := min(len(p), len(r.buf)-int(w-r.read.Load()))
	if n <= 0 {
		return 0
	}
	at := int(w % uint64(len(r.buf)))
	k := copy(r.buf[at:], p[:n])
	copy(r.buf, p[k:n])
	r.write.Store(w + uint64(n))
	return n
}

// Read moves up to len(p) buffered samples into p and returns how many.
// Consumer side.
func (r *Ring) Read(p []int16) int {
	rd := r.read.Load()
	n := min(len(p), int(r.write.Load()-rd))
	if n <= 0 {
		return 0
	}
	r.copyOut(p[:n], rd)
	r.read.Store(rd + uint64(n))
	return n
}

// Peek copies up to len(p) buffered samples into p without consuming
// them and returns how many: the next read starts with the same samples.
// Consumer side.
func (r *Ring) Peek(p []int16) int {
	rd := r.read.Load()
	n := min(len(p), int(r.write.Load()-rd))
	if n <= 0 {
		return 0
	}
	r.copyOut(p[:n], rd)
	return n
}

// ReadFull fills all of p if that many samples are buffered and returns
// true; otherwise it reads nothing and returns false. Reading fixed frames
// this way turns writes of any size into a steady frame stream. Consumer
// side.
func (r *Ring) ReadFull(p []int16) bool {
	rd := r.read.Load()
	if int(r.write.Load()-rd) < len(p) {
		return false
	}
	r.copyOut(p, rd)
	r.read.Store(rd + uint64(len(p)))
	return true
}

// Discard drops up to n buffered samples and returns how many it dropped.
// Consumer side.
func (r *Ring) Discard(n int) int {
	rd := r.read.Load()
	n = max(0, min(n, int(r.write.Load()-rd)))
	r.read.Store(rd + uint64(n))
	return n
}

// Reset drops everything buffered, as on barge-in when queued speech must
// not play. Samples the producer writes concurrently may survive it.
// Consumer side.
func (r *Ring) Reset() {
	r.read.Store(r.write.Load())
}

// copyOut copies len(p) samples starting at absolute position from.
func (r *Ring) copyOut(p []int16, from uint64) {
	at := int(from % uint64(len(r.buf)))
	k := copy(p, r.buf[at:])
	copy(p[k:], r.buf)
}

// AddHot adds to l the ring and the first n bytes of where the next read
// starts (media/prefetch). Consumer side.
func (r *Ring) AddHot(l *prefetch.List, n int) {
	l.Add(prefetch.Addr(r))
	if len(r.buf) > 0 {
		at := int(r.read.Load() % uint64(len(r.buf)))
		l.AddSpan(prefetch.Addr(&r.buf[at]), min(n, 2*(len(r.buf)-at)))
	}
}
