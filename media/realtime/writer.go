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

// outItem is one thing to send: an encoded event, audio (n frames in a
// slot of the queue's frame pool), or a control frame.
type outItem struct {
	kind uint8
	// sealed marks audio that takes no more frames although its slot has
	// room: the audio stopped.
	sealed bool
	n      int
	data   []byte
	slot   int
	p      *agent.Playout
}

// audioFrames is how many agent frames may wait for a slow writer: one
// second. A client that falls further behind is closed.
const audioFrames = 50

// outQueue is the socket's send queue: events from the session loop and
// the reader, audio frames from the pacer, in the order they were pushed,
// for the single writer goroutine. Consecutive frames of one playout share
// a slot of up to perSlot frames, sent as one delta: the writer is woken
// when a slot fills, when the audio stops (seal), or when anything is
// queued behind it, and it leaves a slot that may still grow at the tail
// of the queue. Pushes never block: a full queue marks the client slow,
// and the writer closes it.
type outQueue struct {
	mu       sync.Mutex
	items    []outItem
	head     int
	bytes    int
	max      int
	slow     bool
	closed   bool
	frames   [][]int16 // audio slots of perSlot frames
	free     []int
	signal   chan struct{}
	frameLen int
	perSlot  int
}

func newOutQueue(maxBytes, frameLen, perSlot int) *outQueue {
	slots := max(2, (audioFrames+perSlot-1)/perSlot)
	q := &outQueue{max: maxBytes, signal: make(chan struct{}, 1), frameLen: frameLen, perSlot: perSlot,
		items: make([]outItem, 0, 64), frames: make([][]int16, slots), free: make([]int, slots)}
	for i := range q.frames {
		q.frames[i] = make([]int16, frameLen*perSlot)
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
		q.frames[i] = make([]int16, n*q.perSlot)
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

// pushAudio copies a frame into the open slot of its playout, or into a
// new slot; the pacer's side. It wakes the writer when the slot is full.
// It allocates nothing.
func (q *outQueue) pushAudio(frame []int16, p *agent.Playout) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if last := len(q.items) - 1; last >= q.head {
		if it := &q.items[last]; it.kind == outAudio && it.p == p && !it.sealed && it.n < q.perSlot {
			copy(q.frames[it.slot][it.n*q.frameLen:], frame)
			it.n++
			full := it.n == q.perSlot
			q.mu.Unlock()
			if full {
				q.notify()
			}
			return
		}
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
	// Something queued before this slot (another playout's last frames)
	// need not wait for it to fill.
	behind := len(q.items) > q.head
	q.items = append(q.items, outItem{kind: outAudio, slot: slot, p: p, n: 1})
	q.mu.Unlock()
	if q.perSlot == 1 || behind {
		q.notify()
	}
}

// seal closes the open audio slot (the audio stopped) and wakes the
// writer to send it.
func (q *outQueue) seal() {
	q.mu.Lock()
	if last := len(q.items) - 1; last >= q.head && q.items[last].kind == outAudio {
		q.items[last].sealed = true
	}
	q.mu.Unlock()
	q.notify()
}

// pop takes the next item; ok is false when the queue is empty or holds
// only an audio slot that may still grow. slow reports a client that fell
// behind.
func (q *outQueue) pop() (it outItem, ok, slow bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		return outItem{}, false, q.slow
	}
	if h := &q.items[q.head]; q.head == len(q.items)-1 && h.kind == outAudio && !h.sealed && h.n < q.perSlot && !q.closed {
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
				frame := c.q.frames[it.slot][:it.n*c.q.frameLen]
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
