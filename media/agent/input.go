package agent

import (
	"fmt"
	"time"

	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/dsp"
	"github.com/voiced/voiced/media/dtmf"
	"github.com/voiced/voiced/media/turn"
)

// maxBufferFrames bounds the input audio buffer in manual mode (two
// minutes); older audio is dropped.
const maxBufferFrames = 120 * 50

// initialFrames is the input buffer's first capacity: 8 s, the up to 2 s
// of history kept outside a turn (100 frames), a turn of 5 s and the
// silence that ends it (128 KB at 8 kHz, 256 KB at 16 kHz). It would grow
// past that anyway in a call's first long turns; reserved up front, the
// growth (an allocation and a copy of the whole buffer, each time) does
// not happen on the pacer, where an allocation can start a GC cycle and
// have the tick pay for its marking. (4 s was too little: history, a 3 s
// turn and its silence are about 290 frames, and at 600 S1 calls the
// growth made 40 MB of the pacer's garbage in 10 s.)
const initialFrames = 400

// input is the session's input side, owned by the transport's receive
// goroutine: echo cancellation, noise reduction, speech detection,
// turn-taking and the input audio buffer.
type input struct {
	s *Session
	// unprepare tells a stt.Preparer the session ended; nil without one.
	unprepare func()
	dsp       *dsp.Processor
	det       *turn.Detector // nil: manual turns
	td        *TurnDetection
	// off is the stream frame index of the detector's frame 0.
	off int64

	frame int     // samples per caller frame: 20 ms at the input rate
	buf   []int16 // input audio buffer (processed audio)
	start int64   // frame index of buf[0]
	n     int64   // frames seen

	// The agent's audio as played, for the echo canceller: frames at the
	// output rate from the pacer, at the input rate.
	farOut []int16
	farIn  []int16
	farRS  *resample.Resampler
	// echo explains caller frames by the agent's playout (echo.go): it
	// estimates the echo delay, which the canceller then uses (echoMS, -1
	// while the configured hint holds), and gates barge-in.
	echo   *echoPath
	echoMS int
	// bi pauses the agent at the caller's speech onset and resumes it
	// when no barge-in follows (bargein.go).
	bi bargeIn
	// live feeds detected turns to a streaming STT as they are spoken
	// (live.go); nil without one.
	live *liveFeed
	// keys recognises key presses in the caller's audio
	// (Config.InbandDTMF); nil when off. keyHang counts the frames after
	// a tone that the speech probability may still carry it.
	keys    *dtmf.Detector
	keyHang int
}

// keyHangFrames bounds how long after a key's tone the speech detector's
// probability is taken for the tone's (200 ms): the detector smooths
// over frames, and a 100 ms tone leaves it above the threshold for
// about 150 ms of the silence that follows.
const keyHangFrames = 10

// keyTone reports whether the frame is a key's tone or the speech
// detector's echo of one (prob, its speech probability, not yet fallen
// below the threshold since the tone; keyHangFrames at most, so speech
// right after a key is heard at most that late).
func (in *input) keyTone(prob float32) bool {
	if in.keys.Tone() {
		in.keyHang = keyHangFrames
		return true
	}
	if in.keyHang == 0 {
		return false
	}
	if prob < in.det.Config().Threshold {
		in.keyHang = 0
		return false
	}
	in.keyHang--
	return true
}

func (in *input) init(s *Session) error {
	in.s = s
	p, err := dsp.New(s.cfg.DSP)
	if err != nil {
		return fmt.Errorf("agent: dsp: %w", err)
	}
	in.dsp = p
	in.frame = media.SamplesPerFrame(s.cfg.InputRate)
	in.buf = make([]int16, 0, initialFrames*in.frame)
	if s.needFar {
		if in.farRS, err = resample.New(s.cfg.OutputRate, s.cfg.InputRate, resample.QualityLow); err != nil {
			p.Close()
			return fmt.Errorf("agent: echo reference resampler: %w", err)
		}
		in.farOut = make([]int16, media.SamplesPerFrame(s.cfg.OutputRate))
		in.farIn = make([]int16, in.frame)
		in.echo, in.echoMS = newEchoPath(s.cfg.InputRate), -1
	}
	if s.cfg.InbandDTMF {
		if in.keys, err = dtmf.New(s.cfg.InputRate); err != nil {
			in.close()
			return fmt.Errorf("agent: dtmf: %w", err)
		}
	}
	if _, ok := s.deps.STT.(stt.Streamer); ok && !s.cfg.Loopback {
		in.live = newLiveFeed(s.cfg.InputRate)
		if p, ok := s.deps.STT.(stt.Preparer); ok {
			// The decoder for this session's turns is made now, not
			// when its caller first speaks.
			in.unprepare = p.Prepare()
		}
	}
	if err := in.setTurn(s.cfg.TurnDetection); err != nil {
		in.close()
		return err
	}
	return nil
}

func (in *input) close() {
	if in.unprepare != nil {
		in.unprepare()
	}
	if in.dsp != nil {
		in.dsp.Close()
	}
	if in.farRS != nil {
		in.farRS.Close()
	}
}

// setTurn switches turn detection (nil: manual), keeping any buffered
// audio.
func (in *input) setTurn(td *TurnDetection) error {
	if td == nil {
		in.det, in.td = nil, nil
		in.abortLive()
		return nil
	}
	cfg := td.Turn
	if in.s.cfg.CheckinInterval > 0 {
		cfg.IdleTimeout = in.s.cfg.CheckinInterval
	}
	if in.det != nil {
		if err := in.det.SetConfig(cfg); err != nil {
			return fmt.Errorf("agent: turn detection: %w", err)
		}
	} else {
		d, err := turn.New(cfg)
		if err != nil {
			return fmt.Errorf("agent: turn detection: %w", err)
		}
		in.det, in.off = d, in.n
	}
	c := *td
	in.td = &c
	return nil
}

// SetTurnDetection changes turn detection (nil: manual). Input goroutine
// only, like WriteFrame.
func (s *Session) SetTurnDetection(td *TurnDetection) error {
	if err := s.in.setTurn(td); err != nil {
		return err
	}
	var c *TurnDetection
	if td != nil {
		v := *td
		c = &v
	}
	return s.do(func() { s.td = c })
}

// nextFar takes the agent's frame that played alongside this caller frame
// and returns it at the input rate, or nil when the agent was silent. A backlog
// (the caller's audio stalled while the agent spoke) is dropped down to
// the latest frame.
func (in *input) nextFar() []int16 {
	f := in.s.far
	n := len(in.farOut)
	if f.Len() > 5*n {
		f.Discard(f.Len() - n)
	}
	if !f.ReadFull(in.farOut) {
		return nil
	}
	k, err := in.farRS.ProcessTo(in.farIn, in.farOut)
	if err != nil || k != len(in.farIn) {
		return nil
	}
	return in.farIn
}

// followEcho gives the echo canceller the estimated echo delay when it
// moved by 20 ms or more: the canceller's filter covers echoes from about
// 20 ms before its delay, so it gets 10 ms less than the estimate.
func (in *input) followEcho() error {
	d := in.echo.Delay()
	if d < 0 || !in.s.cfg.DSP.EchoCancellation {
		return nil
	}
	ms := max(0, int(d/time.Millisecond)-10)
	if in.echoMS >= 0 && abs(ms-in.echoMS) < 20 {
		return nil
	}
	in.echoMS = ms
	return in.dsp.SetEchoDelay(time.Duration(ms) * time.Millisecond)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// WriteFrame takes the caller's next 20 ms at the input rate (16 kHz
// unless Config.InputRate says 8 kHz): it records it,
// cancels the agent's echo, reduces noise, detects speech and turns, and
// buffers it. pcm is only read. Input goroutine only: WriteFrame,
// CommitInput, ClearInput and SetTurnDetection must be called from one
// goroutine (the transport's receive loop). It allocates nothing except
// when a turn is committed.
func (s *Session) WriteFrame(pcm []int16) error { return s.WriteFrameFrom(pcm, nil) }

// WriteFrameFrom is WriteFrame with the same 20 ms also as the transport
// decoded it, before it was resampled to the input rate (a G.711 call's
// 8 kHz): a recording at that rate takes decoded as it is instead of
// resampling pcm back down. decoded at another rate, or nil, is ignored.
// Both are only read.
func (s *Session) WriteFrameFrom(pcm, decoded []int16) error {
	in := &s.in
	if len(pcm) != in.frame {
		return ErrFrameSize
	}
	if s.closed.Load() {
		return ErrClosed
	}
	var far []int16
	if s.needFar {
		far = in.nextFar()
	}
	if s.rec != nil {
		s.rec.callerFrame(pcm, decoded)
	}
	if f := s.tap.Load(); f != nil {
		f.caller(pcm, decoded)
	}
	// Keys are looked for in the frame as it came, before the noise
	// reduction, which may take a steady tone for noise.
	if in.keys != nil {
		if k := in.keys.Process(pcm); k != 0 {
			s.post(note{kind: nDTMF, a: int64(k)})
		}
	}
	if in.echo != nil {
		in.echo.Listen(far, pcm)
		if err := in.followEcho(); err != nil {
			return err
		}
	}
	if s.cfg.DSP.EchoCancellation {
		ref := far
		if ref == nil {
			clear(in.farIn)
			ref = in.farIn
		}
		if err := in.dsp.ProcessFar(ref); err != nil {
			return err
		}
	}
	// The frame is processed in place where it is buffered: a copy of its
	// own would be one more cold buffer to write per call and tick.
	in.buf = append(in.buf, pcm...)
	res, err := in.dsp.ProcessNear(in.buf[len(in.buf)-in.frame:])
	if err != nil {
		in.buf = in.buf[:len(in.buf)-in.frame]
		return err
	}
	in.n++
	if in.det == nil {
		if frames := int64(len(in.buf) / in.frame); frames > maxBufferFrames {
			in.drop(frames - maxBufferFrames)
		}
		return nil
	}
	prob := res.Probability
	var echo float32
	if in.echo != nil {
		echo = in.echo.Expected(len(pcm))
	}
	overNoise, overAll := in.bi.loud(pcm, echo)
	if in.echo != nil && in.echo.Explained(in.buf[len(in.buf)-in.frame:], in.bi.noise()) {
		// The agent's own playout explains this frame: whatever the
		// canceller left of it is not the caller.
		prob = 0
	}
	if in.keys != nil && in.keyTone(prob) {
		// A key's tone is not the caller speaking, nor loud over the
		// noise for barge-in.
		prob, overNoise, overAll = 0, 0, 0
	}
	if in.live != nil && in.live.active {
		in.det.SetHint(in.live.currentHint(in.n-1, in.det.Silence()))
	}
	prob, agent := in.barge(prob, overNoise, overAll)
	ev := in.det.Process(prob, agent)
	switch ev.Kind {
	case turn.None:
		if in.live != nil && in.det.Speaking() {
			in.live.write(in.buf[len(in.buf)-in.frame:])
		}
	case turn.SpeechStarted:
		if in.live != nil {
			from := max(in.off+ev.Start, in.start)
			in.live.start(from, in.span(from, in.n))
		}
		var paused *Playout
		in.decided()
		if ev.Interrupt && in.td.InterruptResponse {
			if p := s.play.Load(); p != nil && p.pause() {
				paused = p
			}
		}
		var live uint32
		if in.live != nil {
			live = in.live.turn
		}
		s.post(note{kind: nSpeechStarted, a: turn.FrameMS(in.off + ev.Start), flag: ev.Interrupt, playout: paused, live: live})
	case turn.SpeechStopped:
		from, to := in.off+ev.Start, in.off+ev.End
		s.post(note{kind: nSpeechStopped, a: turn.FrameMS(to)})
		var live uint32
		if in.live != nil {
			if n, ok := in.live.end(); ok {
				live = n
			}
		}
		pcm := in.take(from, to)
		s.post(note{kind: nCommitted, pcm: pcm, a: turn.FrameMS(from), b: turn.FrameMS(to), live: live})
	case turn.IdleTimeout:
		s.post(note{kind: nTimeout, a: turn.FrameMS(in.off + ev.Start), b: turn.FrameMS(in.off + ev.End)})
	}
	if !in.det.Speaking() && len(in.buf) > 100*in.frame {
		// Outside a turn only the last second can become a prefix.
		in.drop(int64(len(in.buf)/in.frame) - 50)
	}
	return nil
}

// span returns the buffered frames [from, to), not copied.
func (in *input) span(from, to int64) []int16 {
	from = max(from, in.start)
	f := int64(in.frame)
	to = min(to, in.start+int64(len(in.buf))/f)
	if to <= from {
		return nil
	}
	return in.buf[(from-in.start)*f : (to-in.start)*f]
}

// abortLive drops a turn being fed to the streaming STT.
func (in *input) abortLive() {
	if in.live != nil {
		in.live.abort()
	}
}

// take copies the buffered frames [from, to) and drops everything before
// to. The copy goes into the spare turn buffer when it is big enough (see
// spareTurn), so that the pacer does not allocate a turn's audio.
func (in *input) take(from, to int64) []int16 {
	from = max(from, in.start)
	f := int64(in.frame)
	to = min(to, in.start+int64(len(in.buf))/f)
	var out []int16
	if to > from {
		src := in.buf[(from-in.start)*f : (to-in.start)*f]
		out = append(in.s.takeSpare(len(src)), src...)
	}
	if to > in.start {
		in.drop(to - in.start)
	}
	return out
}

// drop forgets the first k buffered frames.
func (in *input) drop(k int64) {
	f := int64(in.frame)
	k = min(k, int64(len(in.buf))/f)
	n := copy(in.buf, in.buf[k*f:])
	in.buf = in.buf[:n]
	in.start += k
}

// CommitInput turns the whole input buffer into a user item
// (input_audio_buffer.commit). Input goroutine only.
func (s *Session) CommitInput(eventID string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	in := &s.in
	if len(in.buf) == 0 {
		s.post(note{kind: nCommitEmpty, eventID: eventID})
		return nil
	}
	from := in.start
	in.abortLive()
	pcm := in.take(in.start, in.n)
	if in.det != nil {
		in.det.Reset()
	}
	s.post(note{kind: nCommitted, pcm: pcm, eventID: eventID, a: turn.FrameMS(from), b: turn.FrameMS(in.n)})
	return nil
}

// ClearInput empties the input buffer (input_audio_buffer.clear). Input
// goroutine only.
func (s *Session) ClearInput(eventID string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	in := &s.in
	in.drop(int64(len(in.buf) / in.frame))
	in.abortLive()
	if in.det != nil {
		in.det.Reset()
	}
	s.post(note{kind: nCleared, eventID: eventID})
	return nil
}

// A committed turn's audio is copied out of the input buffer on the input
// goroutine, which for a phone call is the node's pacer. Allocated there,
// it is the pacer's garbage and, while a GC cycle runs, the pacer's tick
// pays a mark assist for it. So the session's loop, which receives each
// turn, leaves a buffer for the next one in Session.spare (one, a quarter
// larger than the turn it received), and take uses it when it fits. When
// a turn's audio has been played back (loopback) or transcribed, its
// buffer comes back (recycleTurn) and becomes the spare after the next
// turn, so a conversation of similar turns allocates none after its first
// two: the turns were most of a node's garbage, and fewer GC cycles are
// fewer mark phases for the pacer's ticks to share the P with
// (docs/decisions.md).

// takeSpare returns the spare turn buffer, emptied, if one is there and
// holds n samples, else nil (append then allocates). Input goroutine.
func (s *Session) takeSpare(n int) []int16 {
	select {
	case sp := <-s.spare:
		if cap(sp) >= n {
			return sp[:0]
		}
	default:
	}
	return nil
}

// spareTurn leaves a buffer for the turn after one of n samples, if none
// is waiting: the turn buffer that came back last if it holds n samples
// (it was made a quarter larger than a turn before, and turns of one
// conversation differ by a few frames), else a new one a quarter larger
// than n. Loop goroutine (the spare's only sender).
func (s *Session) spareTurn(n int) {
	if n == 0 || len(s.spare) > 0 {
		return
	}
	var b []int16
	select {
	case f := <-s.freeTurn:
		if cap(f) >= n {
			b = f[:0]
		}
	default:
	}
	if b == nil {
		b = make([]int16, 0, n+n/4)
	}
	s.spare <- b
}

// recycleTurn hands back a committed turn's buffer once nothing reads it
// any more, for spareTurn. One is kept; another is left to the GC. Any
// goroutine.
func (s *Session) recycleTurn(b []int16) {
	if cap(b) == 0 {
		return
	}
	select {
	case s.freeTurn <- b:
	default:
	}
}
