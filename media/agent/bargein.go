package agent

import (
	"math"
	"math/bits"
)

// Pause fast, decide, then stop or resume (issue 31, items 2 and 3).
//
// The turn detector's barge-in rule (700 ms of speech within 1.2 s) is
// what keeps backchannels, coughs and doors from cutting the agent off,
// but the agent talked over the caller all that time. So the input side
// pauses the agent's playout as soon as the caller's speech starts
// (pauseOnset speech frames among the last pauseWindow): the pacer's next
// frame fades it to silence. The detector goes on counting with the agent
// taken as talking, and decides as before:
//   - a barge-in (turn.SpeechStarted with Interrupt): the pause becomes
//     the interruption's, which the transcript settles as before (words
//     stop the response and truncate it to what was played);
//   - no barge-in, and fewer than resumeMin of the last resumeWindow
//     frames counted towards one (the backchannel, cough or door is over,
//     or the noise that paused the agent does not sound like a caller),
//     or maxHold without a decision: the playout resumes where it paused,
//     fading back in.
//
// Both are events (PlayoutPaused, PlayoutResumed).
//
// Noise (item 3). A frame over the agent counts as the caller's speech
// only if, besides the speech detector and the echo gate, it stands out of
// the noise: the raw frame's level (before the canceller, which
// suppresses noise along with the echo, so the noise comes back louder
// when the agent pauses) is compared with a 20th-percentile tracker of
// that level. To pause, it must stand pauseMargin above the noise plus
// the echo the playout predicts; to count towards the barge-in,
// decideMargin above the noise within the last loudHang frames. Babble
// and pink noise at 10 dB under the caller stay below both far more often
// than the caller does. When the agent is silent, a turn starts only on
// frames startMargin above the noise (once it is learnt), and within a
// turn a frame under endMargin is silence, so babble neither opens a turn
// nor keeps one open.

const (
	// pauseOnset speech frames among the last pauseWindow pause the agent:
	// 60 ms of speech; or fastOnset frames in a row fastMargin (dB) over
	// the noise and the predicted echo: a voice that loud is no noise.
	pauseOnset  = 3
	pauseWindow = 4
	fastOnset   = 2
	fastMargin  = 12
	// A paused agent that was not interrupted resumes once fewer than
	// resumeMin of the last resumeWindow frames counted towards the
	// barge-in decision, at least resumeQuiet frames after the pause:
	// longer than the gaps within a backchannel. The evidence that holds
	// the pause is the decision's own: 4-talker babble at 10 dB has 6-7%
	// of its frames decideMargin over the noise and a fifth pauseMargin
	// over it, so a pause it caused and any pauseMargin frame held went on
	// to maxHold (the phone scorecard: 1.5 s of silence in 12 of 40
	// trials), while a caller 10 dB over it counts in most frames.
	resumeQuiet  = 15
	resumeWindow = 20
	resumeMin    = 6
	// maxHold frames without a decision resume it anyway: the detector's
	// barge-in window and a bit.
	maxHold = 75

	// The noise level rises levelUp dB on a frame above it and falls
	// levelDown on a frame below it: it settles where a fifth of the
	// frames are below it.
	levelUp   = 0.05
	levelDown = 0.2
	// pauseMargin (dB) over the noise and the predicted echo makes a
	// speech frame count for a pause; decideMargin over the noise, within
	// loudHang frames, makes one count for the barge-in decision.
	// startMargin over the noise, within loudHang frames, makes a frame
	// count for the start of a turn while the agent is silent, once the
	// noise is learnt: 1-2% of babble's frames stand that far out, 45% of
	// a caller's 10 dB over it.
	pauseMargin  = 6
	decideMargin = 8
	startMargin  = 10
	loudHang     = 2
	// gateNoiseCap (dB) bounds the noise the echo gate subtracts over the
	// level heard without echo.
	gateNoiseCap = 3
	// emptyDB: a frame under this level (RMS about 10, -70 dBFS) carries
	// no signal: digital silence, G.711's idle pattern, or what the receive
	// path plays where no packet came. The level does not start on it: a
	// phone call's first frames are such silence, and a level started
	// there rose towards the real noise at levelUp per frame (2.5 dB/s),
	// so babble stood out of it as the caller's voice for the call's first
	// 20 s (the phone path's babble rows: half the trials stopped). Once
	// started, it lowers the level as any quieter frame does, down to
	// emptyDB.
	emptyDB = 20
	// endMargin (dB) over the noise keeps a speech frame speech within a
	// turn once the noise has been learnt for noiseLearnt frames: below
	// it, the frame is silence for the end of the turn (babble keeps the
	// speech detector hearing speech after the caller stopped). 4-talker
	// babble has a fifth of its frames 6 dB over its own level and 3% 9 dB
	// over it, a caller 10 dB over it half: at 6 dB a turn under babble
	// did not end while the babble went on (the realtime scorecard: 10 of
	// 40 interruptions never answered).
	endMargin   = 9
	noiseLearnt = 50
	// endHang frames after the last frame that counted as the caller's
	// voice within a turn (speech endMargin out of the noise) still count
	// as speech: the speech detector's own release, which the endMargin
	// rule cut, so a 300-600 ms pause to think no longer ends the turn at
	// server_vad's 500 ms (17 of 40 hesitations were cut off, 0 after).
	endHang = 7
)

// bargeIn is the input side's pause state. Input goroutine.
type bargeIn struct {
	hist  uint64   // bit i set: frame n-1-i counted for a pause
	fast  uint64   // bit i set: ... and stood fastMargin out
	ev    uint64   // bit i set: frame n-1-i counted towards the barge-in decision
	held  *Playout // the playout this side paused, awaiting the decision
	since int64    // frame the pause started at
	// refractory: after a resume on maxHold, no new pause until the input
	// has been quiet for resumeQuiet frames (a noise that keeps the rule
	// busy must not stutter the agent).
	refractory bool

	level   float64 // the noise level, dB of mean square (int16 units)
	started bool
	frames  int64 // frames the level has tracked
	// clean is the same level learnt only on frames no echo can be in.
	clean        float64
	cleanStarted bool
	lastLoud     int64 // last frame decideMargin over the noise
	lastStart    int64 // last frame startMargin over the noise
	lastVoice    int64 // last frame of a turn that counted as the caller's voice
	// off leaves the agent playing until the detector's decision, as
	// before the pause existed (the scorecards' "before").
	off bool
}

// loud tracks the raw caller frame's level and returns how far (dB) it
// stands above the noise, and above the noise plus echo (the echo the
// playout predicts, mean square).
func (b *bargeIn) loud(pcm []int16, echo float32) (overNoise, overAll float64) {
	e := energy(pcm)
	d := float64(level(e))
	if d < emptyDB {
		if b.started {
			// Silence between a client's turns, once the line was heard:
			// the quietest noise there is. Left out, the level learnt
			// from the caller's words alone, and their softer turns no
			// longer stood startMargin out of it.
			b.level = max(emptyDB, b.level-levelDown)
		}
		return 0, 0 // not loud either
	}
	if !b.started {
		b.level, b.started = d, true
	}
	b.frames++
	overNoise, overAll = d-b.level, d-b.level
	if echo > 0 {
		overAll = d - float64(level(float32(math.Pow(10, b.level/10))-1+echo))
	}
	up, down := levelUp, levelDown
	if !b.learnt() && echo == 0 {
		// The first second learns ten times as fast, to the same
		// percentile, while the agent is silent: a level started on a
		// loud first frame (a tone, the caller's first word) took seconds
		// to come down, and within a turn the caller's softer words stood
		// under endMargin of it. (Over the agent's first words it paused
		// the agent more often.)
		up, down = 10*levelUp, 10*levelDown
	}
	b.level = step(b.level, d, up, down)
	if echo == 0 {
		// No echo can be in this frame: its level is the noise's.
		if !b.cleanStarted {
			b.clean, b.cleanStarted = d, true
		} else {
			b.clean = step(b.clean, d, levelUp, levelDown)
		}
	}
	return overNoise, overAll
}

// step moves a level l toward a frame's level d: up on a louder frame,
// down on any other, so that it settles where down/(up+down) of the
// frames are louder.
func step(l, d, up, down float64) float64 {
	if d > l {
		return l + up
	}
	return l - down
}

// learnt reports whether the noise level has tracked noiseLearnt frames.
func (b *bargeIn) learnt() bool { return b.frames > noiseLearnt }

// noise returns the noise level for the echo gate, which subtracts it, as
// a mean square per sample: the all-frames level, but at most gateNoiseCap
// over the level learnt where no echo can be, and 0 before any frame with
// signal. The all-frames level holds echo where the agent talks without
// gaps, and the gate would then let loud echo through; but an agent that
// speaks first on a phone call (the call's first frames are silence)
// leaves no echo-free frame for seconds, and with nothing subtracted the
// gate took the caller's noise for echo and learnt its gain from it: the
// echo it then predicted for the agent's loud frames stood 6-12 dB over
// the noise, and a caller speaking 10 dB over the noise neither paused
// the agent nor counted towards the barge-in (the phone path's barge-ins
// under babble, 11 of 30 missed; 6 with the all-frames level).
func (b *bargeIn) noise() float32 {
	if !b.started {
		return 0
	}
	l := b.level
	if b.cleanStarted {
		l = min(l, b.clean+gateNoiseCap)
	}
	return float32(math.Pow(10, l/10)) - 1
}

// barge runs the pause rule on the caller's frame: prob is its speech
// probability after the echo gate, overNoise and overAll from loud. It
// returns the probability for the turn detector (0 over the agent unless
// the frame stands out of the noise) and whether the agent counts as
// talking: playing, or paused by this side pending the decision.
func (in *input) barge(prob float32, overNoise, overAll float64) (float32, bool) {
	b := &in.bi
	if b.off {
		return prob, in.s.speaking.Load()
	}
	thr := in.det.Config().Threshold
	speech := prob >= thr
	n := in.n
	if overNoise >= decideMargin {
		b.lastLoud = n
	}
	if overNoise >= startMargin {
		b.lastStart = n
	}
	loud := n-b.lastLoud <= loudHang
	inTurn := in.det.Speaking()
	b.hist <<= 1
	b.fast <<= 1
	if b.held == nil && speech && overAll >= pauseMargin {
		b.hist |= 1
		if overAll >= fastMargin {
			b.fast |= 1
		}
	}
	// A frame counts towards the decision (and holds a pause) on its
	// level over the noise alone: while the agent is paused its echo dies
	// away, and the echo the playout still predicts would hide the
	// caller's words.
	b.ev <<= 1
	if speech && loud {
		b.ev |= 1
	}
	talking := in.hold()
	switch {
	case inTurn:
	case talking && !loud:
		prob = 0
	case !talking && b.learnt() && n-b.lastStart > loudHang:
		// With the agent silent too, once the noise is learnt, a turn
		// starts only on frames that stand out of it: babble is speech to
		// the speech detector, and the agent answered it.
		prob = 0
	}
	if inTurn && b.learnt() {
		// Within a turn, a frame that does not stand out of the learnt
		// noise is silence: the turn ends when the caller's voice does,
		// though babble or noise goes on (issue 31); the endHang frames
		// after the voice are speech, as the detector's release was.
		if speech && overNoise >= endMargin {
			b.lastVoice = n
		}
		if n-b.lastVoice <= endHang {
			prob = max(prob, thr)
		} else {
			prob = 0
		}
	} else {
		b.lastVoice = n
	}
	return prob, talking
}

// hold pauses, keeps or resumes the playout on the pause rule's
// evidence. It reports whether the agent counts as talking.
func (in *input) hold() bool {
	s := in.s
	b := &in.bi
	n := in.n
	talking := s.speaking.Load()
	if b.held != nil {
		p := b.held
		if s.play.Load() != p || !p.paused() {
			// Stopped, replaced or resumed elsewhere.
			b.held = nil
			return talking
		}
		switch {
		case n-b.since >= resumeQuiet && bits.OnesCount64(b.ev&(1<<resumeWindow-1)) < resumeMin:
		case n-b.since >= maxHold:
			b.refractory = true
		default:
			return true
		}
		b.held = nil
		if p.resume() {
			s.post(note{kind: nResumed, playout: p, a: p.PlayedMS()})
		}
		return true
	}
	if b.refractory && b.hist&(1<<resumeQuiet-1) == 0 {
		b.refractory = false
	}
	if !talking || b.refractory || in.td == nil || !in.td.InterruptResponse ||
		!b.onset() {
		return talking
	}
	p := s.play.Load()
	if p == nil || !p.pause() {
		return talking
	}
	b.held, b.since = p, n
	s.post(note{kind: nPaused, playout: p, a: p.PlayedMS()})
	return true
}

// onset reports whether the last frames are the caller's onset over the
// agent: pauseOnset of the last pauseWindow, or the last fastOnset loud.
func (b *bargeIn) onset() bool {
	const fastMask = 1<<fastOnset - 1
	return bits.OnesCount64(b.hist&(1<<pauseWindow-1)) >= pauseOnset || b.fast&fastMask == fastMask
}

// decided hands a pause to the detector's barge-in decision: the
// interruption owns it now.
func (in *input) decided() { in.bi.held = nil }

// paused reports a pause or a resume (notes nPaused, nResumed) to the
// client; loop goroutine.
func (s *Session) paused(n note, resumed bool) {
	r := s.run
	if r == nil || r.playout != n.playout || r.msg == nil {
		return
	}
	if resumed {
		s.emit(PlayoutResumed{ResponseID: r.resp.ID, ItemID: r.msg.ID, AudioMS: n.a})
		return
	}
	s.emit(PlayoutPaused{ResponseID: r.resp.ID, ItemID: r.msg.ID, AudioMS: n.a})
}
