package agent

import (
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/turn"
)

// Live transcription: with a streaming STT (stt.Streamer), a detected
// turn's audio goes to the session's STT worker while the caller speaks,
// so that the transcript is ready a frame or two after the turn ends, and
// the partial transcript tells the turn detector whether the words so far
// end mid-phrase (semantic_vad). The input goroutine, a phone call's
// pacer, only copies the turn's frames into a ring and never waits; the
// worker decodes. The committed turn still carries its audio: a turn whose
// live feed broke (the ring overflowed, a marker was lost, the stream
// failed) is transcribed whole, as without a streaming STT.

// liveRingSeconds is how far the worker may fall behind the caller before
// a turn's feed breaks: 5 s of audio at the input rate (160 KB per session
// at 16 kHz, 80 KB for a phone call). The worker only falls behind while it
// loads a decoder (0.5-1 s) or ends the previous turn: a turn that finds
// every decoder held keeps its audio in the pool's stream, not here.
const liveRingSeconds = 5

// Marker kinds of the live feed.
const (
	markStart uint8 = iota // a turn's audio begins at pos
	markEnd                // the turn's audio ends at pos
	markAbort              // the turn was dropped (clear, manual commit)
)

// liveMark tells the worker where in the ring a turn starts or ends. A
// mark is sent before the audio after it is written, so the worker,
// which reads the ring's length before the marks, never reads a turn's
// audio without its start.
type liveMark struct {
	kind uint8
	pos  int64 // samples written to the ring before the mark
	turn uint32
}

// liveFeed is the input side of live transcription (input goroutine).
type liveFeed struct {
	ring  *media.Ring
	marks chan liveMark
	wake  chan struct{}
	// hint is the worker's verdict on the current turn's partial
	// transcript and how much of the turn it heard: turn<<40 | frames
	// decoded<<8 | turn.Contour<<4 | turn.Hint (packHint).
	hint atomic.Uint64
	from int64 // the current turn's first frame in the stream

	written int64  // samples written to the ring
	turn    uint32 // the current (or last) turn's number
	active  bool   // a turn is being fed
	broken  bool   // the current turn lost audio or a mark
}

func newLiveFeed(rate int) *liveFeed {
	r, _ := media.NewRing(liveRingSeconds * rate)
	return &liveFeed{ring: r, marks: make(chan liveMark, 64), wake: make(chan struct{}, 1)}
}

func (f *liveFeed) mark(kind uint8) bool {
	select {
	case f.marks <- liveMark{kind: kind, pos: f.written, turn: f.turn}:
		return true
	default:
		return false
	}
}

func (f *liveFeed) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// start begins a turn with its audio so far, from stream frame from.
func (f *liveFeed) start(from int64, pcm []int16) {
	f.from = from
	if f.active {
		f.abort()
	}
	f.turn++
	f.active, f.broken = true, !f.mark(markStart)
	f.write(pcm)
}

// write feeds the current turn's next audio.
func (f *liveFeed) write(pcm []int16) {
	if !f.active || f.broken {
		return
	}
	n := f.ring.Write(pcm)
	f.written += int64(n)
	if n < len(pcm) {
		f.broken = true
	}
	f.signal()
}

// end closes the current turn and says whether all of its audio reached
// the worker (else the turn is transcribed whole).
func (f *liveFeed) end() (turn uint32, ok bool) {
	if !f.active {
		return 0, false
	}
	f.active = false
	ok = f.mark(markEnd) && !f.broken
	f.signal()
	return f.turn, ok
}

// abort drops the current turn.
func (f *liveFeed) abort() {
	if !f.active {
		return
	}
	f.active = false
	f.mark(markAbort)
	f.signal()
}

// completeAfter is how much of the silence after a turn's last word the
// decoder must have heard before the words count as complete (240 ms): a
// word is in the partial transcript only once the search has left it, so
// until then the words can end on the one before ("i want to book"
// before "a"), and the turn would end at a hesitation.
const completeAfter = 12

// completeAfterFall is completeAfter for words said with a falling voice
// (160 ms): a caller's voice falls at the end of a sentence, not before
// the article or preposition the decoder has not yet put in the partial.
const completeAfterFall = 8

// currentHint is the worker's hint for the current turn, frame now
// (its index in the stream) being the next the detector sees and silence
// the frames since the turn's last speech frame. Words that can end
// (HintComplete, HintFinal, HintHold) count only once the decoder heard
// completeAfter frames of that silence, completeAfterFall when the voice
// fell.
func (f *liveFeed) currentHint(now, silence int64) turn.Hint {
	v := f.hint.Load()
	if uint32(v>>40) != f.turn&(1<<24-1) {
		return turn.HintUnknown
	}
	h, c := turn.Hint(v&0xf), turn.Contour(v>>4&0xf)
	if h == turn.HintComplete || h == turn.HintFinal || h == turn.HintHold {
		need := int64(completeAfter)
		if c == turn.ContourFall {
			need = completeAfterFall
		}
		decoded := f.from + int64(v>>8&(1<<32-1))
		if silence-max(0, now-decoded) < need {
			return turn.HintUnknown
		}
	}
	return h
}

// packHint packs a turn's hint for the pacer: the turn's number, the
// frames the decoder has heard, and the hint with the contour it came
// from.
func packHint(turnNo uint32, frames int64, h turn.Hint, c turn.Contour) uint64 {
	return uint64(turnNo&(1<<24-1))<<40 | uint64(frames&(1<<32-1))<<8 | uint64(c&0xf)<<4 | uint64(h&0xf)
}

// liveWorker is the STT worker's side of the feed.
type liveWorker struct {
	s     *Session
	st    stt.Streamer
	f     *liveFeed
	rate  int
	read  int64     // samples read from the ring
	next  *liveMark // a mark received, not yet reached
	cur   *liveTurn // the turn being fed
	ended []*liveTurn
	buf   []int16
	up    []int16 // buf at 16 kHz
	// voice follows the current turn's pitch: how its voiced speech ends
	// is half of the semantic end-of-turn hint.
	voice  turn.Intonation
	closed bool
}

// liveTurn is one turn's stream.
type liveTurn struct {
	turn uint32
	fed  int // samples fed, at the input rate
	// partial is the last partial hypothesis sent to the loop.
	partial string
	s       stt.Stream // nil: the stream failed or finished
	rs      *resample.Resampler
	// The transcript, once the stream finished at the turn's end mark:
	// ok is false when there is none (the stream failed; the turn is
	// transcribed whole).
	res stt.Result
	err error
	ok  bool
}

func (t *liveTurn) close() {
	if t.s != nil {
		t.s.Close()
		t.s = nil
	}
	if t.rs != nil {
		t.rs.Close()
		t.rs = nil
	}
}

// pump decodes whatever audio the feed holds, following its marks.
func (w *liveWorker) pump() {
	for {
		avail := int64(w.f.ring.Len())
		if w.next == nil {
			select {
			case m := <-w.f.marks:
				w.next = &m
			default:
			}
		}
		limit := w.read + avail
		if w.next != nil && w.next.pos < limit {
			limit = w.next.pos
		}
		for w.read < limit {
			k := int(min(limit-w.read, int64(len(w.buf))))
			got := w.f.ring.Read(w.buf[:k])
			if got == 0 {
				break
			}
			w.read += int64(got)
			w.feed(w.buf[:got])
		}
		if w.next == nil || w.read < w.next.pos {
			return
		}
		m := *w.next
		w.next = nil
		w.apply(m)
		if m.kind == markEnd {
			// The turn's transcript is ready: hand the worker back to
			// its commit (the transcriber serves jobs first) before
			// decoding on into the next turn, which a worker behind the
			// caller would otherwise do for seconds. The wake brings it
			// back for the rest.
			w.f.signal()
			return
		}
	}
}

// apply acts on a mark the reading reached.
func (w *liveWorker) apply(m liveMark) {
	switch m.kind {
	case markStart:
		if w.cur != nil {
			w.cur.close()
		}
		t := &liveTurn{turn: m.turn}
		if st, err := w.st.Stream(w.s.ctx, stt.Request{Language: w.s.cfg.Language}); err == nil {
			t.s = st
		} else {
			w.s.log.Warn("live transcription: no stream", "err", err)
		}
		if w.rate != media.Rate16k && t.s != nil {
			rs, err := resample.New(w.rate, media.Rate16k, resample.QualityPhone)
			if err != nil {
				t.close()
			}
			t.rs = rs
		}
		w.cur = t
		w.voice.Reset()
		w.f.hint.Store(packHint(m.turn, 0, turn.HintUnknown, turn.ContourUnknown))
	case markEnd:
		if w.cur != nil && w.cur.turn == m.turn {
			// The turn's transcript is made now, as soon as its last
			// audio is decoded, not when its commit reaches the worker:
			// the commit goes through the session's loop, and by then
			// the marks may have started the next turn (babble or noise
			// opens one at once), whose stream would take a decoder,
			// possibly load one (0.5-1 s), before this turn's words.
			t := w.cur
			w.cur = nil
			if t.s != nil {
				st := t.s
				t.s = nil
				t0 := time.Now()
				t.res, t.err = st.Finish(w.s.ctx)
				t.ok = t.err == nil
				w.s.log.Debug("live turn finished", "turn", t.turn, "finish_ms", time.Since(t0).Milliseconds(),
					"behind_ms", int64(w.f.ring.Len())*1000/int64(w.rate), "ok", t.ok)
			}
			t.close()
			w.ended = append(w.ended, t)
		}
	case markAbort:
		if w.cur != nil && w.cur.turn == m.turn {
			w.cur.close()
			w.cur = nil
		}
	}
}

// feed decodes the current turn's next audio and publishes its hint.
func (w *liveWorker) feed(pcm []int16) {
	t := w.cur
	if t == nil || t.s == nil || len(pcm) == 0 {
		return
	}
	in := pcm
	if t.rs != nil {
		need := t.rs.OutputLen(len(pcm))
		if cap(w.up) < need {
			w.up = make([]int16, need)
		}
		n, err := t.rs.ProcessTo(w.up[:need], pcm)
		if err != nil {
			t.close()
			return
		}
		in = w.up[:n]
	}
	if err := t.s.Write(in); err != nil {
		w.s.log.Warn("live transcription: write", "err", err)
		t.close()
		return
	}
	t.fed += len(pcm)
	w.voice.Write(in)
	p := t.s.Partial()
	if p != t.partial {
		// The loop turns the hypotheses into appended text
		// (conversation.go, partialText).
		t.partial = p
		w.s.post(note{kind: nPartial, live: t.turn, text: p})
	}
	c := w.voice.Contour()
	h := turn.EndOf(p, c)
	if h != turn.Hint(w.f.hint.Load()&0xf) {
		w.s.log.Debug("live turn hint", "turn", t.turn, "audio_ms", t.fed*1000/w.rate, "partial", p, "contour", c.String(), "hint", int(h))
	}
	w.f.hint.Store(packHint(t.turn, int64(t.fed/media.SamplesPerFrame(w.rate)), h, c))
}

// finish returns the transcript of turn, ended in the feed; ok is false
// when its stream broke and the turn must be transcribed whole.
func (w *liveWorker) finish(turn uint32) (res stt.Result, ok bool, err error) {
	w.pump()
	for len(w.ended) > 0 {
		e := w.ended[0]
		w.ended = w.ended[1:]
		if e.turn == turn {
			return e.res, e.ok, e.err
		}
		// A turn whose commit never came: its result is dropped.
	}
	return stt.Result{}, false, nil
}

func (w *liveWorker) close() {
	if w.cur != nil {
		w.cur.close()
	}
	for _, t := range w.ended {
		t.close()
	}
	w.ended = nil
}
