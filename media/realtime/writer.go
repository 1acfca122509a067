package realtime

import (
	"bufio"
	"sync"
	"time"

	"github.com/gobwas/ws"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/media/agent"
)

// Out-queue entry kinds.
const (
	outJSON uint8 = iota
	outAudio
	outPing
	outPong
	outClose
)

// outItem is one thing to send: an encoded event, an audio frame (in a
// slot of the queue's frame pool), or a control frame.
type outItem struct {
	kind uint8
	data []byte
	slot int
	p    *agent.Playout
}

// audioSlots is how many agent frames may wait for a slow writer: one
// second. A client that falls further behind is closed.
const audioSlots = 50

// outQueue is the socket's send queue: events from the session loop and
// the reader, audio frames from the pacer, in the order they were pushed,
// for the single writer goroutine. Pushes never block: a full queue marks
// the client slow, and the writer closes it.
type outQueue struct {
	mu       sync.Mutex
	items    []outItem
	head     int
	bytes    int
	max      int
	slow     bool
	closed   bool
	frames   [][]int16 // audio slots
	free     []int
	signal   chan struct{}
	frameLen int
}

func newOutQueue(maxBytes, frameLen int) *outQueue {
	q := &outQueue{max: maxBytes, signal: make(chan struct{}, 1), frameLen: frameLen,
		items: make([]outItem, 0, 64), frames: make([][]int16, audioSlots), free: make([]int, audioSlots)}
	for i := range q.frames {
		q.frames[i] = make([]int16, frameLen)
		q.free[i] = i
	}
	return q
}

func (q *outQueue) notify() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// setFrameLen sizes the audio slots for the output format, before any
// audio is pushed.
func (q *outQueue) setFrameLen(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n == q.frameLen {
		return
	}
	q.frameLen = n
	for i := range q.frames {
		q.frames[i] = make([]int16, n)
	}
}

// push queues a message or control frame.
func (q *outQueue) push(kind uint8, data []byte) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if q.bytes+len(data) > q.max && kind == outJSON {
		q.slow = true
	} else {
		q.items = append(q.items, outItem{kind: kind, data: data})
		q.bytes += len(data)
	}
	q.mu.Unlock()
	q.notify()
}

// pushAudio copies a frame into a slot and queues it; the pacer's side.
// It allocates nothing.
func (q *outQueue) pushAudio(frame []int16, p *agent.Playout) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if len(q.free) == 0 {
		q.slow = true
		q.mu.Unlock()
		q.notify()
		return
	}
	slot := q.free[len(q.free)-1]
	q.free = q.free[:len(q.free)-1]
	copy(q.frames[slot], frame)
	q.items = append(q.items, outItem{kind: outAudio, slot: slot, p: p})
	q.mu.Unlock()
	q.notify()
}

// pop takes the next item; ok is false when the queue is empty. slow
// reports a client that fell behind.
func (q *outQueue) pop() (it outItem, ok, slow bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		return outItem{}, false, q.slow
	}
	it = q.items[q.head]
	q.items[q.head] = outItem{}
	q.head++
	q.bytes -= len(it.data)
	return it, true, q.slow
}

// release returns an audio slot after its frame was written.
func (q *outQueue) release(slot int) {
	q.mu.Lock()
	q.free = append(q.free, slot)
	q.mu.Unlock()
}

// close stops further pushes.
func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.notify()
}

// writer is the socket's only writer goroutine: it drains the queue,
// encodes audio frames, pings, and closes the socket on a write error, a
// slow client or a close request.
func (c *conn) writer() {
	defer c.wg.Done()
	bw := bufio.NewWriterSize(c.nc, 32<<10)
	ping := time.NewTicker(c.srv.cfg.PingInterval)
	defer ping.Stop()
	var scratch, payload []byte
	for {
		select {
		case <-c.done:
			return
		case <-c.q.signal:
		case <-ping.C:
			if c.idle() {
				c.requestClose(ws.StatusNormalClosure, "idle timeout")
			}
			c.q.push(outPing, nil)
			continue
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
		for {
			it, ok, slow := c.q.pop()
			if slow {
				_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
				_ = writeFrame(bw, ws.OpClose, closeBody(ws.StatusPolicyViolation, "slow consumer"))
				_ = bw.Flush()
				c.setEnd("error", "client too slow to read")
				c.nc.Close()
				return
			}
			if !ok {
				break
			}
			var err error
			switch it.kind {
			case outJSON:
				err = writeFrame(bw, ws.OpText, it.data)
			case outAudio:
				frame := c.q.frames[it.slot]
				payload = c.encodeAudio(payload[:0], frame)
				c.q.release(it.slot)
				if c.binaryOutput.Load() {
					err = writeFrame(bw, ws.OpBinary, payload)
				} else {
					scratch = c.enc.appendAudioDelta(scratch[:0], it.p, payload)
					err = writeFrame(bw, ws.OpText, scratch)
				}
			case outPing:
				err = writeFrame(bw, ws.OpPing, nil)
			case outPong:
				err = writeFrame(bw, ws.OpPong, it.data)
			case outClose:
				_ = writeFrame(bw, ws.OpClose, it.data)
				_ = bw.Flush()
				// The reader waits a moment for the client's close.
				_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
				return
			}
			if err != nil {
				c.setEnd("caller_hangup", "write: "+err.Error())
				c.nc.Close()
				return
			}
		}
		if err := bw.Flush(); err != nil {
			c.setEnd("caller_hangup", "write: "+err.Error())
			c.nc.Close()
			return
		}
	}
}

// encodeAudio appends frame in the output encoding to dst.
func (c *conn) encodeAudio(dst []byte, frame []int16) []byte {
	switch c.set.out.codec {
	case codecULaw:
		dst = growBytes(dst, len(frame))
		g711.EncodeULawTo(dst, frame)
	case codecALaw:
		dst = growBytes(dst, len(frame))
		g711.EncodeALawTo(dst, frame)
	default:
		dst = growBytes(dst, 2*len(frame))
		pcm.Int16ToBytesTo(dst, frame)
	}
	return dst
}

// growBytes returns b resized to n bytes, reusing its array when it can.
func growBytes(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
