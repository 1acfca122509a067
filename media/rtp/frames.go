package rtp

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/jitter"
	"github.com/voiced/voiced/media/prefetch"
	"github.com/voiced/voiced/media/quality"
)

// maxBehind is how many due frames a slow reader may owe before the
// oldest are skipped rather than played late.
const maxBehind = 5

// Source supplies the audio a Session sends, pulled on the pacer goroutine
// once per 20 ms. The conversation engine's ReadFrame(dst) *Playout fits
// with a one-line adapter (audio when the result is not nil).
type Source interface {
	// ReadFrame fills dst with the next 20 ms and reports whether it holds
	// audio; false means there is none (silence or comfort noise goes
	// out) and dst is ignored. It must not block.
	ReadFrame(dst []int16) bool
}

// Sink takes the peer's audio in push mode: one 20 ms frame at 16 kHz
// (320 samples), or at the rate given to SetSinkAt, per pacer tick,
// written on the pacer worker right after
// the tick's packets were drained into the jitter buffer. The conversation
// engine's WriteFrame fits as it is. WriteFrame must not block and must
// not call the Session's Close; pcm is valid only during the call. An
// error stops the deliveries (the Sink is dropped and the error logged).
type Sink interface {
	WriteFrame(pcm []int16) error
}

// DecodedSink is a Sink that also takes each frame as the codec decoded
// it, at the codec's rate (8 kHz for G.711), before it was resampled to
// 16 kHz: WriteFrameFrom replaces WriteFrame. A consumer that wants the
// codec's rate (a G.711 call's recording) then need not resample the
// 16 kHz frame back down. decoded is nil while no codec is negotiated;
// like pcm it is valid only during the call.
type DecodedSink interface {
	Sink
	WriteFrameFrom(pcm, decoded []int16) error
}

// sinkBox is a Sink with its rate and frame buffer.
type sinkBox struct {
	k    Sink
	dk   DecodedSink // k, when it is one
	hot  HotLister   // hotOf(k)
	rate int
	pcm  []int16
}

// SetSink makes the session push the peer's audio into k, one frame per
// tick on the pacer worker, instead of a goroutine pulling it with
// ReadFrame (which then returns ErrSinkSet); nil returns to ReadFrame. It
// replaces a goroutine and a wake-up per call and frame with a function
// call. Set it before anything calls ReadFrame, or after the last
// ReadFrame returned: the two share the reader's resampler.
func (s *Session) SetSink(k Sink) { _ = s.SetSinkAt(k, EngineRate) }

// SetSinkAt is SetSink with the Sink's frames at rate Hz (8000, 16000,
// 24000 or 48000) instead of 16 kHz: a G.711 call's consumer that listens
// at 8 kHz takes its frames as decoded, with no resampler per call and
// tick.
func (s *Session) SetSinkAt(k Sink, rate int) error {
	if k == nil {
		s.sink.Store(nil)
		return nil
	}
	if err := media.ValidateRate(rate); err != nil {
		return fmt.Errorf("sink rate: %w", err)
	}
	dk, _ := k.(DecodedSink)
	s.sink.Store(&sinkBox{k: k, dk: dk, hot: hotOf(k), rate: rate, pcm: make([]int16, rate/50)})
	if s.waiting.Load() {
		select {
		case s.wake <- struct{}{}: // a blocked ReadFrame returns ErrSinkSet
		default:
		}
	}
	return nil
}

// postTick is the session's receive work on the pacer worker, once per
// 20 ms after every stream of the worker sent its packet: drain the RTP
// socket into the jitter buffer and either push the frame that is due to
// the Sink or count it due and wake the ReadFrame goroutine. A frame thus
// contains every packet that arrived before its tick's drain, as it did
// when a receive goroutine pushed each packet on arrival: drained
// reception adds no delay to the audio, only to what is reported when a
// packet is handled (latching, DTMF digits), at most one period plus the
// tick's lateness.
func (s *Session) postTick(time.Time) {
	now := time.Now() // the drain comes after this worker's sends
	s.drain(now)
	if b := s.sink.Load(); b != nil {
		n, decoded, err := s.readFrame(b.pcm, b.rate, now)
		if err == nil {
			if b.dk != nil {
				err = b.dk.WriteFrameFrom(b.pcm[:n], decoded)
			} else {
				err = b.k.WriteFrame(b.pcm[:n])
			}
		}
		if err != nil && s.sink.CompareAndSwap(b, nil) {
			s.log.Warn("rtp: sink stopped", "err", err)
		}
		if prefetch.Enabled {
			s.gatherSink(b)
		}
		return
	}
	s.due.Add(1)
	if s.waiting.Load() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// readerState belongs to the goroutine calling ReadFrame.
type readerState struct {
	read uint64 // frames read, against Session.due
	gen  uint64 // receive codec generation the resampler was built for
	to   int    // and the rate it was built for
	up   *resample.Resampler
}

// ReadFrame blocks until the next 20 ms frame is due (the node pacer's
// tick), then writes it into dst at 16 kHz: the peer's audio after the
// jitter buffer, concealment where packets are missing, comfort noise or
// silence. dst must hold 320 samples. One goroutine reads (none while a
// Sink is set: ReadFrame then returns ErrSinkSet); it owns the
// resampler, so the steady state allocates nothing. A reader that falls
// more than five frames behind skips the backlog. It returns ctx.Err() when
// ctx ends and ErrClosed after Close; a media timeout does not stop it
// (watch Done).
func (s *Session) ReadFrame(ctx context.Context, dst []int16) (int, error) {
	if len(dst) < engineFrame {
		return 0, fmt.Errorf("read into %d samples: %w", len(dst), ErrFrameSize)
	}
	r := &s.reader
	for s.due.Load() <= r.read {
		if s.closing.Load() {
			return 0, ErrClosed
		}
		if s.sink.Load() != nil {
			return 0, ErrSinkSet
		}
		s.waiting.Store(true)
		if s.due.Load() > r.read {
			s.waiting.Store(false)
			break
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			s.waiting.Store(false)
			return 0, ctx.Err()
		case <-s.closed:
			s.waiting.Store(false)
			return 0, ErrClosed
		}
		s.waiting.Store(false)
	}
	if due := s.due.Load(); due-r.read > maxBehind {
		r.read = due - 1
	}
	r.read++
	n, _, err := s.readFrame(dst[:engineFrame], EngineRate, time.Now())
	return n, err
}

// readFrame produces one frame at now, at rate (dst holds 20 ms of it):
// the body of ReadFrame after the wait. It also returns the frame as
// decoded, at the codec's rate (nil without a codec; dst itself when that
// is rate), valid until the next readFrame.
func (s *Session) readFrame(dst []int16, rate int, now time.Time) (int, []int16, error) {
	r := &s.reader
	s.mu.Lock()
	rc := s.rxc
	if rc == nil {
		s.mu.Unlock()
		clear(dst)
		return len(dst), nil, nil
	}
	// At the codec's rate the frame is decoded straight into dst; at
	// another it goes through rc.pcm to the resampler.
	out := rc.pcm
	if rc.play.Rate() == rate {
		out = dst[:len(rc.pcm)]
	}
	kind, err := rc.play.ReadFrame(now, out)
	st := rc.buf.Stats()
	if prefetch.Enabled {
		s.gatherRx(rc)
	}
	base := s.base
	s.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	m := &s.m
	quality.Set(&m.Late, base.late+st.Late)
	quality.Set(&m.BufferDrops, base.drops+st.Dropped+st.Overflow)
	quality.SetInt(&m.BufferDelay, int64(st.Delay))
	quality.SetInt(&m.BufferDelayTarget, int64(st.Target))
	m.FramesPlayed.Add(1)
	if kind == jitter.Conceal {
		m.FramesConcealed.Add(1)
	}

	// out is written only by Playout.ReadFrame, which only this goroutine
	// calls: it is safe to read after unlocking.
	if r.gen != rc.gen || r.to != rate {
		if r.up != nil {
			r.up.Close()
		}
		r.up = nil
		if from := rc.play.Rate(); from != rate {
			up, err := resample.New(from, rate, receiveQuality(from, rate))
			if err != nil {
				return 0, nil, fmt.Errorf("resample %d->%d: %w", from, rate, err)
			}
			r.up = up
		}
		r.gen, r.to = rc.gen, rate
	}
	if r.up == nil {
		return len(out), out, nil
	}
	n, err := r.up.ProcessTo(dst, out)
	if err != nil {
		return 0, nil, err
	}
	return n, out, nil
}

// frameQueue carries encoded frames from WriteFrame (one producer) to the
// pacer's Tick (one consumer) without locks: fixed slots, atomic positions.
type frameQueue struct {
	slots []queued
	w, r  atomic.Uint64
}

type queued struct {
	gen uint64
	n   int
	b   [maxPayload]byte
}

func newFrameQueue(n int) *frameQueue { return &frameQueue{slots: make([]queued, n)} }

// reserve returns the next free slot, or nil when the queue is full.
// Producer side.
func (q *frameQueue) reserve() *queued {
	w := q.w.Load()
	if w-q.r.Load() >= uint64(len(q.slots)) {
		return nil
	}
	return &q.slots[w%uint64(len(q.slots))]
}

// commit publishes the reserved slot. Producer side.
func (q *frameQueue) commit() { q.w.Add(1) }

// pop copies the oldest frame of generation gen into dst and returns its
// length, skipping frames before flushTo and of other generations; 0 when
// none is left. Consumer side.
func (q *frameQueue) pop(dst []byte, gen, flushTo uint64) int {
	r, w := q.r.Load(), q.w.Load()
	if r < flushTo {
		r = min(flushTo, w)
	}
	for r < w {
		sl := &q.slots[r%uint64(len(q.slots))]
		r++
		if sl.gen == gen {
			n := copy(dst, sl.b[:sl.n])
			q.r.Store(r)
			return n
		}
	}
	q.r.Store(r)
	return 0
}

// len returns the frames queued. Either side.
func (q *frameQueue) len() int { return int(q.w.Load() - q.r.Load()) }

// writerState belongs to the goroutine calling WriteFrame.
type writerState struct {
	gen  atomic.Uint64 // the send codec generation, published by Update
	mine uint64        // the generation enc was built for
	enc  *encoder
}

// WriteFrame encodes one 20 ms frame at 16 kHz (320 samples) on the
// caller's goroutine and queues it; the pacer sends it on a later tick.
// It returns ErrQueueFull when Config.QueueFrames frames are waiting (the
// caller is ahead of real time by that much), and ErrSourceSet while a
// Source feeds the session. Frames written before Update are dropped. One
// goroutine writes; the steady state allocates nothing.
func (s *Session) WriteFrame(pcm []int16) error {
	if s.closing.Load() {
		return ErrClosed
	}
	if s.hasSrc.Load() {
		return ErrSourceSet
	}
	if len(pcm) != engineFrame {
		return fmt.Errorf("write of %d samples: %w", len(pcm), ErrFrameSize)
	}
	w := &s.writer
	if g := w.gen.Load(); g != w.mine {
		s.txMu.Lock()
		g, c := s.tx.gen, s.tx.params.Codec
		s.txMu.Unlock()
		enc, err := newEncoder(c, EngineRate)
		if err != nil {
			return err
		}
		w.enc, w.mine = enc, g
	}
	if w.enc == nil {
		return nil
	}
	sl := s.queue.reserve()
	if sl == nil {
		return ErrQueueFull
	}
	n, err := w.enc.encode(sl.b[:], pcm)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	sl.gen, sl.n = w.mine, n
	s.queue.commit()
	return nil
}

// Queued returns the number of frames WriteFrame has queued and the pacer
// has not sent yet. Safe from any goroutine.
func (s *Session) Queued() int { return s.queue.len() }

// Flush drops the frames queued by WriteFrame that have not left yet (a
// barge-in). Safe from any goroutine.
func (s *Session) Flush() { s.flushTo.Store(s.queue.w.Load()) }

// SetSource makes the pacer pull outbound audio from src at rate Hz (8000,
// 16000, 24000 or 48000) instead of the WriteFrame queue; nil returns to
// the queue. The Source's audio is resampled to the codec and encoded on
// the pacer goroutine, which suits G.711 (microseconds per frame); an Opus
// encode costs about a tenth of a millisecond.
func (s *Session) SetSource(src Source, rate int) error {
	if err := media.ValidateRate(rate); err != nil && src != nil {
		return fmt.Errorf("source rate: %w", ErrFrameSize)
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	t := &s.tx
	t.enc.close()
	t.enc, t.src, t.srcRate = nil, src, rate
	t.srcHot = hotOf(src)
	if src != nil {
		t.srcPCM = make([]int16, rate/50)
		if t.started {
			enc, err := newEncoder(t.params.Codec, rate)
			if err != nil {
				t.src, t.srcHot = nil, nil
				return err
			}
			t.enc = enc
		}
	}
	s.hasSrc.Store(src != nil)
	return nil
}

// SendDTMF queues digits (0-9, *, #, A-D) to send as RFC 4733 events of
// duration d each (0 means 100 ms; at least 40 ms), separated by 60 ms.
// Audio pauses while an event is sent. It returns ErrNoDTMF when the peer
// negotiated no telephone-event and ErrQueueFull past 32 pending digits.
func (s *Session) SendDTMF(digits string, d time.Duration) error {
	if d == 0 {
		d = 100 * time.Millisecond
	}
	d = max(d, 40*time.Millisecond)
	events := make([]byte, 0, len(digits))
	for _, r := range digits {
		ev, ok := digitEvent(r)
		if !ok {
			return fmt.Errorf("%q: %w", r, ErrBadDigit)
		}
		events = append(events, ev)
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if !s.tx.started || s.tx.params.DTMF.Name == "" {
		return ErrNoDTMF
	}
	if s.tx.dtmf.n+len(events) > len(s.tx.dtmf.queue) {
		return ErrQueueFull
	}
	for _, ev := range events {
		s.tx.dtmf.push(ev, d)
	}
	return nil
}
