package turn

import (
	"fmt"
	"time"

	"github.com/voiced/voiced/media"
)

// Mode is the kind of turn detection, as the realtime API's
// turn_detection.type.
type Mode uint8

const (
	// ServerVAD ends turns after a fixed silence (server_vad, the zero
	// value).
	ServerVAD Mode = iota
	// SemanticVAD ends turns after a silence chosen by Eagerness and by
	// the caller's words so far (semantic_vad, SemanticSilence).
	SemanticVAD
)

// String returns the API name of m.
func (m Mode) String() string {
	if m == SemanticVAD {
		return "semantic_vad"
	}
	return "server_vad"
}

// Eagerness is semantic_vad's eagerness: how soon a pause ends the turn.
type Eagerness uint8

const (
	// EagernessAuto is the zero value and behaves as EagernessMedium.
	EagernessAuto Eagerness = iota
	// EagernessLow lets the caller take their time.
	EagernessLow
	// EagernessMedium is the middle ground.
	EagernessMedium
	// EagernessHigh answers as soon as the caller pauses.
	EagernessHigh
)

// String returns the API name of e.
func (e Eagerness) String() string {
	switch e {
	case EagernessLow:
		return "low"
	case EagernessMedium:
		return "medium"
	case EagernessHigh:
		return "high"
	}
	return "auto"
}

// ParseEagerness maps an API eagerness name ("low", "medium", "high",
// "auto" or empty) to an Eagerness.
func ParseEagerness(s string) (Eagerness, error) {
	switch s {
	case "", "auto":
		return EagernessAuto, nil
	case "low":
		return EagernessLow, nil
	case "medium":
		return EagernessMedium, nil
	case "high":
		return EagernessHigh, nil
	}
	return 0, fmt.Errorf("eagerness %q: %w", s, ErrConfig)
}

// Hint is what the caller's words so far, and the voice that ends them,
// say about the end of their turn (see Complete and EndOf).
type Hint uint8

const (
	// HintUnknown is the zero value: no words yet, or none that tell.
	HintUnknown Hint = iota
	// HintComplete: the words end as a finished sentence can.
	HintComplete
	// HintIncomplete: the words end mid-phrase ("I want to book a", a
	// trailing conjunction, preposition, article or "um").
	HintIncomplete
	// HintFinal: the words can end a sentence and the voice ended them as
	// one: falling (ContourFall), or a question.
	HintFinal
	// HintHold: the words can end a sentence but the voice holds the
	// floor: level or rising at the end of a statement (ContourHold), as
	// a caller pausing to think mid-sentence does.
	HintHold
)

// SemanticSilence is the silence that ends a turn under semantic_vad with
// eagerness e and what the partial transcript and the voice say (h): a
// turn whose words end mid-phrase waits longest, then one whose words
// could end but whose voice holds; without words, or with words that can
// end and a voice that does not tell, the wait is in between; words that
// can end said with a final fall (or as a question) end it soonest. Auto
// is medium.
func SemanticSilence(e Eagerness, h Hint) time.Duration {
	ms := [4][5]int{
		// unknown, complete, incomplete, final, hold
		EagernessAuto:   {500, 450, 1200, 200, 800},
		EagernessMedium: {500, 450, 1200, 200, 800},
		EagernessLow:    {1000, 700, 2000, 500, 1400},
		EagernessHigh:   {400, 200, 800, 150, 500},
	}[e][h]
	return time.Duration(ms) * time.Millisecond
}

// Defaults of Config, as OpenAI's server_vad.
const (
	DefaultThreshold       = 0.5
	DefaultPrefixPadding   = 300 * time.Millisecond
	DefaultSilenceDuration = 500 * time.Millisecond
	DefaultMinSpeech       = 200 * time.Millisecond
	DefaultInterruptSpeech = 700 * time.Millisecond
	DefaultInterruptWindow = 1200 * time.Millisecond
	DefaultEchoWarmup      = 2 * time.Second
)

// maxWindow is the longest speech-counting window: the history is one
// bit per frame in a uint64.
const maxWindow = 64 * media.FrameDuration

// Config configures a Detector. Zero fields mean their defaults; durations
// are rounded to whole 20 ms frames.
type Config struct {
	// Mode selects server_vad or semantic_vad.
	Mode Mode
	// Threshold is the speech probability at or above which a frame is
	// speech, in (0, 1). Zero means 0.5.
	Threshold float32
	// PrefixPadding is the audio kept before the first speech frame of a
	// turn. Zero means 300 ms; negative means none.
	PrefixPadding time.Duration
	// SilenceDuration is the silence that ends a turn under server_vad.
	// Zero means 500 ms. Under semantic_vad it is SemanticSilence of
	// Eagerness and the Hint given with Detector.SetHint.
	SilenceDuration time.Duration
	// Eagerness picks the silence under semantic_vad.
	Eagerness Eagerness
	// IdleTimeout reports IdleTimeout after this long without any sound
	// from either side. Zero means never.
	IdleTimeout time.Duration
	// MinSpeech is the speech, within twice as long, that starts a turn
	// while the agent is silent. Zero means 200 ms; at most 640 ms.
	MinSpeech time.Duration
	// InterruptSpeech is the speech, within InterruptWindow, that starts a
	// turn while the agent is talking (a barge-in). Shorter utterances are
	// backchannels. Zero means 700 ms.
	InterruptSpeech time.Duration
	// InterruptWindow is the window InterruptSpeech is counted in, at
	// least InterruptSpeech and at most 1280 ms. Zero means 1200 ms.
	InterruptWindow time.Duration
	// EchoWarmup is how much agent audio an echo canceller needs to
	// converge: until the agent has talked this long in the stream, a
	// barge-in needs half as much speech again (at most the window), as
	// residual echo is loudest then. Zero means 2 s; negative means none.
	EchoWarmup time.Duration
}

// WithDefaults fills zero fields (and a negative PrefixPadding or
// EchoWarmup means none): the values the detector runs with.
func (c Config) WithDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	switch {
	case c.PrefixPadding == 0:
		c.PrefixPadding = DefaultPrefixPadding
	case c.PrefixPadding < 0:
		c.PrefixPadding = 0
	}
	if c.SilenceDuration == 0 {
		c.SilenceDuration = DefaultSilenceDuration
	}
	if c.MinSpeech == 0 {
		c.MinSpeech = DefaultMinSpeech
	}
	if c.InterruptSpeech == 0 {
		c.InterruptSpeech = DefaultInterruptSpeech
	}
	if c.InterruptWindow == 0 {
		c.InterruptWindow = max(DefaultInterruptWindow, c.InterruptSpeech)
	}
	switch {
	case c.EchoWarmup == 0:
		c.EchoWarmup = DefaultEchoWarmup
	case c.EchoWarmup < 0:
		c.EchoWarmup = 0
	}
	return c
}

// validate checks a Config with defaults filled.
func (c Config) validate() error {
	switch {
	case c.Mode > SemanticVAD:
		return fmt.Errorf("mode %d: %w", c.Mode, ErrConfig)
	case c.Eagerness > EagernessHigh:
		return fmt.Errorf("eagerness %d: %w", c.Eagerness, ErrConfig)
	case !(c.Threshold > 0 && c.Threshold < 1):
		return fmt.Errorf("threshold %v not in (0, 1): %w", c.Threshold, ErrConfig)
	case c.PrefixPadding > 10*time.Second:
		return fmt.Errorf("prefix padding %v above 10 s: %w", c.PrefixPadding, ErrConfig)
	case c.SilenceDuration < media.FrameDuration || c.SilenceDuration > 10*time.Second:
		return fmt.Errorf("silence duration %v not in [20 ms, 10 s]: %w", c.SilenceDuration, ErrConfig)
	case c.IdleTimeout < 0:
		return fmt.Errorf("idle timeout %v is negative: %w", c.IdleTimeout, ErrConfig)
	case c.MinSpeech < media.FrameDuration || 2*c.MinSpeech > maxWindow:
		return fmt.Errorf("min speech %v not in [20 ms, 640 ms]: %w", c.MinSpeech, ErrConfig)
	case c.InterruptSpeech < media.FrameDuration || c.InterruptWindow > maxWindow || c.InterruptWindow < c.InterruptSpeech:
		return fmt.Errorf("interrupt speech %v in window %v: want 20 ms <= speech <= window <= 1280 ms: %w",
			c.InterruptSpeech, c.InterruptWindow, ErrConfig)
	}
	return nil
}

// frames converts a duration to whole frames, rounding to nearest.
func frames(d time.Duration) int64 {
	return int64((d + media.FrameDuration/2) / media.FrameDuration)
}

// FrameMS returns the time of frame index n in milliseconds from the
// first frame.
func FrameMS(n int64) int64 { return n * int64(media.FrameDuration/time.Millisecond) }
