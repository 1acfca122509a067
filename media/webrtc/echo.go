package webrtc

import "github.com/voiced/voiced/media"

// Echo turn thresholds.
const (
	// echoSpeechRMS is the frame RMS (about -40 dBFS) above which a frame
	// is speech.
	echoSpeechRMS = 320
	// echoHangover is how many quiet frames end a turn (400 ms).
	echoHangover = 20
	// echoMaxTurn caps one recorded turn (10 s).
	echoMaxTurn = 10 * media.FramesPerSecond
)

// Echo is the minimal conversation: it records each caller turn and, when
// the turn ends (400 ms of quiet), plays it back. While it plays back it
// does not listen, so it never echoes itself. It exercises a call's whole
// audio path without STT, a model or TTS.
//
// Echo works at one rate for both directions. WriteFrame and ReadFrame may
// run on different goroutines only if the caller serializes them; Run
// calls them in turn on one goroutine. It allocates only in NewEcho.
type Echo struct {
	spf    int
	turn   []int16 // the recorded turn
	n      int     // samples recorded
	quiet  int     // quiet frames since the last speech frame
	speech bool    // a turn is being recorded
	back   bool    // the turn is being played back
	play   int     // next sample to play back
	// OnTurn, when set, is called as a turn ends with its duration in
	// milliseconds (the widget's transcript shows it).
	OnTurn func(ms int)
}

// NewEcho returns an Echo for 20 ms frames at rate Hz.
func NewEcho(rate int) (*Echo, error) {
	if err := media.ValidateRate(rate); err != nil {
		return nil, err
	}
	spf := media.SamplesPerFrame(rate)
	return &Echo{spf: spf, turn: make([]int16, spf*echoMaxTurn)}, nil
}

// WriteFrame takes the caller's next frame.
func (e *Echo) WriteFrame(in []int16) error {
	if len(in) != e.spf {
		return ErrFrameSize
	}
	if e.back {
		return nil
	}
	loud := media.RMS(in) >= echoSpeechRMS
	switch {
	case loud:
		e.speech, e.quiet = true, 0
	case !e.speech:
		return nil
	default:
		e.quiet++
	}
	if e.n+e.spf <= len(e.turn) {
		e.n += copy(e.turn[e.n:], in)
	}
	if e.quiet >= echoHangover || e.n+e.spf > len(e.turn) {
		// The turn ended: drop its trailing quiet and play it back.
		e.n -= min(e.quiet, e.n/e.spf) * e.spf
		e.speech, e.quiet, e.play, e.back = false, 0, 0, e.n > 0
		if e.OnTurn != nil {
			e.OnTurn(e.n * 1000 / (e.spf * media.FramesPerSecond))
		}
	}
	return nil
}

// ReadFrame fills out with the next frame of the turn being played back,
// or silence.
func (e *Echo) ReadFrame(out []int16) {
	if !e.back {
		clear(out)
		return
	}
	k := copy(out, e.turn[e.play:e.n])
	clear(out[k:])
	e.play += k
	if e.play >= e.n {
		e.n, e.play, e.back = 0, 0, false
	}
}
