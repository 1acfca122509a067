package realtime

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"

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
// new slot; the pacer's side. It reports whether there is something to
// send now (the slot is full, an earlier item waits, or the client fell
// behind); the caller sends it or wakes the writer. It allocates nothing.
func (q *outQueue) pushAudio(frame []int16, p *agent.Playout) (ready bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if last := len(q.items) - 1; last >= q.head {
		if it := &q.items[last]; it.p == p && q.growing(it) {
			copy(q.frames[it.slot][it.n*q.frameLen:], frame)
			it.n++
			return it.n == q.perSlot
		}
	}
	if len(q.free) == 0 {
		q.slow = true
		return true
	}
	slot := q.free[len(q.free)-1]
	q.free = q.free[:len(q.free)-1]
	copy(q.frames[slot], frame)
	// Something queued before this slot (another playout's last frames)
	// need not wait for it to fill.
	behind := len(q.items) > q.head
	q.items = append(q.items, outItem{kind: outAudio, slot: slot, p: p, n: 1})
	return q.perSlot == 1 || behind
}

// seal closes the open audio slot (the audio stopped) so that it is sent
// as it is; the caller sends it or wakes the writer.
func (q *outQueue) seal() {
	q.mu.Lock()
	if last := len(q.items) - 1; last >= q.head && q.items[last].kind == outAudio {
		q.items[last].sealed = true
	}
	q.mu.Unlock()
}

// pop takes the next item; ok is false when the queue is empty or holds
// only an audio slot that may still grow. slow reports a client that fell
// behind.
func (q *outQueue) pop() (it outItem, ok, slow bool) { return q.popUntil(outClose + 1) }

// popUntil is pop that leaves an item of kind stop (or later kinds) at the
// head of the queue.
func (q *outQueue) popUntil(stop uint8) (it outItem, ok, slow bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		return outItem{}, false, q.slow
	}
	if !q.ready() || q.items[q.head].kind >= stop {
		return outItem{}, false, q.slow
	}
	it = q.items[q.head]
	q.items[q.head] = outItem{}
	q.head++
	q.bytes -= len(it.data)
	return it, true, q.slow
}

// waiting reports whether items are queued (the writer has work).
func (q *outQueue) waiting() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready()
}

// growing reports whether it is an audio slot that may still take frames.
func (q *outQueue) growing(it *outItem) bool {
	return it.kind == outAudio && !it.sealed && it.n < q.perSlot
}

// ready reports whether the head item can be sent now: anything but an
// audio slot that may still grow at the tail (unless the queue is closed).
// Under q.mu.
func (q *outQueue) ready() bool {
	return q.head < len(q.items) && (q.head < len(q.items)-1 || q.closed || !q.growing(&q.items[q.head]))
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

// sender is the socket's write side. Two goroutines write, one at a time
// under mu: the pacer's, from Tick, which encodes what is queued and hands
// it to the kernel with one non-blocking write (a delta leaves at its tick,
// with no goroutine to wake), and the writer goroutine, which sends events,
// pings and closes, and whatever the pacer could not finish. pend[off:] are
// encoded WebSocket frames not yet written; they go before anything else.
type sender struct {
	mu       sync.Mutex
	pend     []byte
	off      int
	payload  []byte
	scratch  []byte
	raw      syscall.RawConn // nil: no non-blocking writes (not a socket)
	rawWrite func(fd uintptr) bool
	rawN     int
	rawErr   error
	// stopped: the writer goroutine is gone (a close was sent or the
	// socket failed); nothing more is written.
	stopped bool
}

// appendFrame appends one unmasked WebSocket frame (the server's) to b.
func appendFrame(b []byte, op ws.OpCode, payload []byte) []byte {
	n := len(payload)
	b = append(b, 0x80|byte(op))
	switch {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xffff:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// fill encodes queued items into pend, stopping before an item of kind
// stop. It reports a client that fell behind.
func (c *conn) fill(stop uint8) (closing *outItem, slow bool) {
	o := &c.out
	for {
		it, ok, slow := c.q.popUntil(stop)
		if slow {
			return nil, true
		}
		if !ok {
			return nil, false
		}
		switch it.kind {
		case outJSON:
			o.pend = appendFrame(o.pend, ws.OpText, it.data)
		case outAudio:
			frame := c.q.frames[it.slot][:it.n*c.q.frameLen]
			o.payload = c.encodeAudio(o.payload[:0], frame)
			c.q.release(it.slot)
			if c.binaryOutput.Load() {
				o.pend = appendFrame(o.pend, ws.OpBinary, o.payload)
			} else {
				o.scratch = c.enc.appendAudioDelta(o.scratch[:0], it.p, o.payload)
				o.pend = appendFrame(o.pend, ws.OpText, o.scratch)
			}
		case outPing:
			o.pend = appendFrame(o.pend, ws.OpPing, nil)
		case outPong:
			o.pend = appendFrame(o.pend, ws.OpPong, it.data)
		case outClose:
			o.pend = appendFrame(o.pend, ws.OpClose, it.data)
			return &it, false
		}
	}
}

// sent drops the first n unwritten bytes of pend.
func (o *sender) sent(n int) {
	o.off += n
	if o.off == len(o.pend) {
		o.pend, o.off = o.pend[:0], 0
	}
}

// sendNow is the pacer's send: the queue's ordinary items (not a close, not
// a slow client's) are encoded and written without blocking. If the writer
// goroutine holds the socket, or the kernel takes only part, or anything
// else is left, the writer is woken to finish. It allocates nothing once
// the buffers have grown.
func (c *conn) sendNow() {
	o := &c.out
	if o.raw == nil || !o.mu.TryLock() {
		c.q.notify()
		return
	}
	if o.stopped {
		o.mu.Unlock()
		return
	}
	// What an earlier tick could not write goes first; while the socket is
	// backed up the items stay queued, where a client that falls a second
	// behind is found slow.
	done := c.writeNow()
	if done {
		var slow bool
		_, slow = c.fill(outClose)
		done = !slow && c.writeNow()
	}
	o.mu.Unlock()
	if !done || c.q.waiting() {
		c.q.notify()
	}
}

// writeNow writes what is pending with one non-blocking write and reports
// whether nothing is left. Under o.mu.
func (c *conn) writeNow() bool {
	o := &c.out
	if len(o.pend) == o.off {
		return true
	}
	o.rawN, o.rawErr = 0, nil
	err := o.raw.Write(o.rawWrite)
	if o.rawN > 0 {
		o.sent(o.rawN)
	}
	return err == nil && o.rawErr == nil && len(o.pend) == 0
}

// writeOnce is the RawConn callback of sendNow: one write(2) of what is
// pending, never waiting for the socket to become writable.
func (o *sender) writeOnce(fd uintptr) bool {
	n, err := unix.Write(int(fd), o.pend[o.off:])
	if err == unix.EAGAIN {
		err = nil
	}
	o.rawN, o.rawErr = max(n, 0), err
	return true
}

// writer is the socket's writer goroutine: it sends what the pacer does
// not (events, pings, closes, and deltas the pacer could not finish),
// blocking up to the write timeout, and closes the socket on a write
// error, a slow client or a close request.
func (c *conn) writer() {
	defer c.wg.Done()
	o := &c.out
	ping := time.NewTicker(c.srv.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-c.q.signal:
		case <-ping.C:
			if c.idle() {
				c.requestClose(causeIdle)
			}
			c.q.push(outPing, nil)
			continue
		}
		o.mu.Lock()
		closing, slow := c.fill(outClose + 1)
		if slow {
			c.abandon(causeSlow, closing != nil)
			c.setEnd("error", "client too slow to read")
			return
		}
		var err error
		if len(o.pend) > o.off {
			_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
			var n int
			n, err = c.nc.Write(o.pend[o.off:])
			o.sent(n)
			// No deadline left behind for the pacer's writes to trip on.
			_ = c.nc.SetWriteDeadline(time.Time{})
		}
		o.stopped = closing != nil || err != nil
		o.mu.Unlock()
		if closing != nil {
			// The reader waits a moment for the client's close.
			_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
			return
		}
		if err != nil {
			c.setEnd("caller_hangup", "write: "+err.Error())
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// A client that stopped reading may still take the
				// reason (after what it has not read).
				o.mu.Lock()
				c.abandon(causeWriteTimeout, closing != nil)
				return
			}
			c.nc.Close()
			return
		}
	}
}

// abandonWait is how long a client that stopped reading has to take what
// is pending, with the error event and the close that say why, before the
// socket is cut. Only the socket's writer goroutine waits.
const abandonWait = 5 * time.Second

// abandon gives up on a client that does not read (under o.mu, which it
// releases): after what is pending, cause's error event and close frame
// (unless a close is already pending) get abandonWait to leave, then the
// socket is closed.
func (c *conn) abandon(cause closeCause, closePending bool) {
	o := &c.out
	c.closing.Store(true)
	if !closePending {
		o.pend = c.closeFrames(o.pend, cause)
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(abandonWait))
	_, _ = c.nc.Write(o.pend[o.off:])
	o.stopped = true
	o.mu.Unlock()
	c.nc.Close()
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
