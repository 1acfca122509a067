package webrtc

import "sync/atomic"

// maxPacket bounds one encoded 20 ms Opus packet. At the highest bitrate
// Config allows (510 kb/s) a 20 ms frame is 1275 bytes, RFC 6716's maximum.
const maxPacket = 1276

// sendQueue is a fixed ring of encoded packets between one producer
// (WriteFrame) and one consumer (the pacer's Tick). Slots keep their
// buffers, so the steady state allocates nothing; the positions are
// atomics, so neither side takes a lock.
type sendQueue struct {
	slots      []queuedPacket
	head, tail atomic.Uint64 // head: next to send; tail: next to fill
}

type queuedPacket struct {
	buf [maxPacket]byte
	n   int
	// dtx marks a silence frame: it holds a place on the send clock but is
	// not sent (RFC 7587 section 3.1.3 lets a sender skip DTX frames).
	dtx bool
}

func newSendQueue(n int) *sendQueue { return &sendQueue{slots: make([]queuedPacket, n)} }

// free returns the producer's next slot, or nil when the ring is full.
func (q *sendQueue) free() *queuedPacket {
	t := q.tail.Load()
	if t-q.head.Load() >= uint64(len(q.slots)) {
		return nil
	}
	return &q.slots[t%uint64(len(q.slots))]
}

// push publishes the slot free returned.
func (q *sendQueue) push() { q.tail.Add(1) }

// peek returns the consumer's next packet, or nil when the ring is empty.
func (q *sendQueue) peek() *queuedPacket {
	h := q.head.Load()
	if h == q.tail.Load() {
		return nil
	}
	return &q.slots[h%uint64(len(q.slots))]
}

// pop releases the packet peek returned.
func (q *sendQueue) pop() { q.head.Add(1) }

// len returns the number of queued packets.
func (q *sendQueue) len() int { return int(q.tail.Load() - q.head.Load()) }
