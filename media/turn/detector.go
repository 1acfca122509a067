package turn

import (
	"math/bits"
)

// Kind says what a Detector decided on a frame.
type Kind uint8

const (
	// None is the zero value: nothing changed.
	None Kind = iota
	// SpeechStarted reports that a turn began (input_audio_buffer.
	// speech_started). Event.Start is its first frame including prefix
	// padding; Event.Interrupt is set when the agent was talking: the
	// barge-in decision.
	SpeechStarted
	// SpeechStopped reports that the turn ended (speech_stopped):
	// Event.Start is the turn's start as reported with SpeechStarted and
	// Event.End the frame after its last speech frame.
	SpeechStopped
	// Backchannel reports a short utterance made while the agent talked
	// that did not interrupt it ("uh-huh", "okay"), once it ended:
	// Event.Start is its first speech frame, Event.End the frame after its
	// last.
	Backchannel
	// IdleTimeout reports IdleTimeout of silence from both sides.
	IdleTimeout
)

// String returns the event name.
func (k Kind) String() string {
	switch k {
	case SpeechStarted:
		return "speech_started"
	case SpeechStopped:
		return "speech_stopped"
	case Backchannel:
		return "backchannel"
	case IdleTimeout:
		return "idle_timeout"
	}
	return "none"
}

// Event is a Detector's decision on one frame. Frame indices count from
// the first frame given to Process (index 0); FrameMS converts them.
type Event struct {
	Kind Kind
	// Start and End delimit the audio the event is about, in frames: Start
	// inclusive, End exclusive. For SpeechStarted, End is the frame after
	// the one that made the decision.
	Start, End int64
	// Interrupt is set on a SpeechStarted that happened while the agent
	// was talking.
	Interrupt bool
}

// Detector turns per-frame speech probabilities into turn events. See the
// package documentation for the rules. One stream, one goroutine.
type Detector struct {
	cfg Config
	// Frame counts derived from cfg.
	prefix, silence, idle                   int64
	minSpeech, minWindow, intSpeech, intWin int64
	warmSpeech, warmup                      int64
	threshold                               float32
	agentFrames                             int64 // agent audio so far, for the warm-up

	n    int64  // index of the next frame
	hist uint64 // bit i set: frame n-1-i was speech

	speaking   bool  // inside a turn
	turnStart  int64 // the current turn's reported start
	lastSpeech int64 // last speech frame of the current turn
	prevEnd    int64 // end of the previous turn: prefixes stop there

	// An utterance heard but not (yet) a turn.
	candCount  int64 // its speech frames
	candStart  int64 // its first speech frame
	candLast   int64 // its last speech frame
	agentAudio bool  // the agent talked at some point of it

	idleCount int64 // frames without a sound from either side
	idleFired bool

	hint Hint // the partial transcript's say (SetHint)
}

// New returns a Detector for cfg, or an error wrapping ErrConfig that names
// the bad field.
func New(cfg Config) (*Detector, error) {
	d := &Detector{}
	if err := d.SetConfig(cfg); err != nil {
		return nil, err
	}
	return d, nil
}

// SetConfig changes the configuration from the next frame on, keeping the
// stream position and any turn in progress (a session.update that changes
// turn_detection).
func (d *Detector) SetConfig(cfg Config) error {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	d.cfg = cfg
	d.threshold = cfg.Threshold
	d.prefix = frames(cfg.PrefixPadding)
	d.setSilence()
	d.idle = frames(cfg.IdleTimeout)
	d.minSpeech = max(1, frames(cfg.MinSpeech))
	d.minWindow = min(64, 2*d.minSpeech)
	d.intSpeech = max(1, frames(cfg.InterruptSpeech))
	d.intWin = min(64, max(d.intSpeech, frames(cfg.InterruptWindow)))
	d.warmSpeech = min(d.intWin, d.intSpeech*3/2)
	d.warmup = frames(cfg.EchoWarmup)
	return nil
}

// setSilence sets the silence that ends a turn from the configuration and
// the hint.
func (d *Detector) setSilence() {
	silence := d.cfg.SilenceDuration
	if d.cfg.Mode == SemanticVAD {
		silence = SemanticSilence(d.cfg.Eagerness, d.hint)
	}
	d.silence = max(1, frames(silence))
}

// SetHint tells the detector what the words of the turn in progress say
// about its end (the partial transcript): under semantic_vad it picks the
// silence that ends the turn from the next frame on; server_vad ignores
// it. Reset and the end of a turn forget it.
func (d *Detector) SetHint(h Hint) {
	if h != d.hint && h <= HintHold {
		d.hint = h
		d.setSilence()
	}
}

// Silence returns how many frames have passed since the last speech frame
// of the turn in progress (0 outside a turn).
func (d *Detector) Silence() int64 {
	if !d.speaking {
		return 0
	}
	return d.n - 1 - d.lastSpeech
}

// Config returns the configuration with defaults filled in.
func (d *Detector) Config() Config { return d.cfg }

// Frame returns the index of the next frame Process will see: the number
// of frames processed so far.
func (d *Detector) Frame() int64 { return d.n }

// Speaking reports whether a turn is in progress.
func (d *Detector) Speaking() bool { return d.speaking }

// Reset forgets any utterance or turn in progress (input_audio_buffer.clear,
// a manual commit) without moving the stream position. Audio before the
// current frame is never again part of a turn's prefix.
func (d *Detector) Reset() {
	d.SetHint(HintUnknown)
	d.speaking = false
	d.hist = 0
	d.candCount = 0
	d.agentAudio = false
	d.prevEnd = d.n
}

// window counts the speech frames among the last w (w <= 64).
func (d *Detector) window(w int64) int64 {
	mask := ^uint64(0)
	if w < 64 {
		mask = 1<<uint(w) - 1
	}
	return int64(bits.OnesCount64(d.hist & mask))
}

// onset returns the first speech frame among the last w.
func (d *Detector) onset(w int64) int64 {
	mask := ^uint64(0)
	if w < 64 {
		mask = 1<<uint(w) - 1
	}
	h := d.hist & mask
	if h == 0 {
		return d.n - 1
	}
	return d.n - int64(bits.Len64(h))
}

// Process takes the next frame's speech probability (0..1) and whether the
// agent was playing audio during it, and returns the decision, if any.
// It allocates nothing.
func (d *Detector) Process(prob float32, agentSpeaking bool) Event {
	i := d.n
	d.n++
	speech := prob >= d.threshold
	d.hist <<= 1
	if speech {
		d.hist |= 1
	}
	if speech || agentSpeaking {
		d.idleCount, d.idleFired = 0, false
	} else {
		d.idleCount++
	}
	if agentSpeaking {
		d.agentFrames++
	}
	if d.speaking {
		if speech {
			d.lastSpeech = i
			return Event{}
		}
		if i-d.lastSpeech >= d.silence {
			d.speaking = false
			d.prevEnd = d.lastSpeech + 1
			d.hist = 0
			d.SetHint(HintUnknown)
			return Event{Kind: SpeechStopped, Start: d.turnStart, End: d.lastSpeech + 1}
		}
		return Event{}
	}
	if speech {
		if d.candCount == 0 {
			d.candStart, d.agentAudio = i, false
		}
		d.candCount++
		d.candLast = i
		d.agentAudio = d.agentAudio || agentSpeaking
		var confirmed bool
		var onset int64
		if agentSpeaking {
			need := d.intSpeech
			if d.agentFrames <= d.warmup {
				need = d.warmSpeech
			}
			confirmed, onset = d.window(d.intWin) >= need, d.onset(d.intWin)
		} else {
			confirmed, onset = d.window(d.minWindow) >= d.minSpeech, d.onset(d.minWindow)
		}
		if confirmed {
			d.speaking = true
			d.candCount = 0
			d.lastSpeech = i
			d.turnStart = max(onset-d.prefix, d.prevEnd, 0)
			return Event{Kind: SpeechStarted, Start: d.turnStart, End: i + 1, Interrupt: agentSpeaking}
		}
		return Event{}
	}
	d.agentAudio = d.agentAudio || agentSpeaking && d.candCount > 0
	if d.candCount > 0 && i-d.candLast >= d.silence {
		// The utterance ended without becoming a turn.
		backchannel := d.agentAudio && d.candCount >= d.minSpeech
		start, end := d.candStart, d.candLast+1
		d.candCount = 0
		if backchannel {
			return Event{Kind: Backchannel, Start: start, End: end}
		}
	}
	if d.idle > 0 && !d.idleFired && d.idleCount >= d.idle {
		d.idleFired = true
		return Event{Kind: IdleTimeout, Start: i + 1 - d.idle, End: i + 1}
	}
	return Event{}
}
