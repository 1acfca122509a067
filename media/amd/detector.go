package amd

import (
	"fmt"
	"time"

	"github.com/voiced/voiced/media/dsp"
)

// Result is a Detector's verdict so far.
type Result int

// Verdicts. Human, Unknown, Beep and GreetingEnded are final: Process
// keeps returning them. Machine is not: the greeting is still playing
// and the Detector listens on for the beep.
const (
	// Undecided means keep feeding frames.
	Undecided Result = iota
	// Human is a person: a short greeting, then silence.
	Human
	// Machine is an answering machine whose greeting is playing.
	Machine
	// Beep is an answering machine whose beep just ended: speak now.
	Beep
	// GreetingEnded is an answering machine whose greeting ended without
	// a beep being heard.
	GreetingEnded
	// Unknown means no verdict: silence from the start, or nothing
	// conclusive within MaxAnalysis.
	Unknown
)

// String returns the verdict's name as stored in call events.
func (r Result) String() string {
	switch r {
	case Undecided:
		return "undecided"
	case Human:
		return "human"
	case Machine:
		return "machine"
	case Beep:
		return "beep"
	case GreetingEnded:
		return "greeting_ended"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("result(%d)", int(r))
}

// Final reports whether r no longer changes.
func (r Result) Final() bool { return r != Undecided && r != Machine }

// IsMachine reports whether r says a machine answered.
func (r Result) IsMachine() bool { return r == Machine || r == Beep || r == GreetingEnded }

// Config tunes a Detector. Zero fields mean the defaults in brackets.
type Config struct {
	// SampleRate of the frames, 8000..48000 Hz [16000, rtp.EngineRate].
	SampleRate int
	// InitialSilence without any speech gives Unknown [2.5 s].
	InitialSilence time.Duration
	// AfterGreetingSilence after a short greeting gives Human; shorter
	// pauses are within the greeting [800 ms].
	AfterGreetingSilence time.Duration
	// MaxGreeting is the longest greeting of a person: speech going on
	// longer gives Machine [2.5 s].
	MaxGreeting time.Duration
	// MinWord is the shortest burst of speech that counts as a word;
	// shorter ones (clicks, breath) are ignored [100 ms].
	MinWord time.Duration
	// BetweenWords is the pause that separates two words [100 ms].
	BetweenWords time.Duration
	// MaxWords bursts of speech in the greeting give Machine [5].
	MaxWords int
	// MaxAnalysis bounds the wait for Human or Machine: Unknown after it
	// [5 s].
	MaxAnalysis time.Duration
	// BeepMin is the shortest tone taken for a beep [150 ms: 7 whole
	// frames, as a tone that long may straddle 8]; MaxBeep
	// reports Beep while a longer tone still sounds [2 s].
	BeepMin, MaxBeep time.Duration
	// EndSilence after a machine's greeting, with no beep, gives
	// GreetingEnded [2 s]; so does BeepWait after Machine [20 s].
	EndSilence, BeepWait time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.SampleRate == 0 {
		c.SampleRate = 16000
	}
	def(&c.InitialSilence, 2500*time.Millisecond)
	def(&c.AfterGreetingSilence, 800*time.Millisecond)
	def(&c.MaxGreeting, 2500*time.Millisecond)
	def(&c.MinWord, 100*time.Millisecond)
	def(&c.BetweenWords, 100*time.Millisecond)
	def(&c.MaxAnalysis, 5*time.Second)
	def(&c.BeepMin, 150*time.Millisecond)
	def(&c.MaxBeep, 2*time.Second)
	def(&c.EndSilence, 2*time.Second)
	def(&c.BeepWait, 20*time.Second)
	if c.MaxWords == 0 {
		c.MaxWords = 5
	}
	return c
}

// FrameDuration is the length of one frame fed to Process.
const FrameDuration = 20 * time.Millisecond

// frames converts d to whole frames, at least 1.
func frames(d time.Duration) int {
	return max(1, int((d+FrameDuration-1)/FrameDuration))
}

// Detector decides who answered a call. Not safe for concurrent use.
type Detector struct {
	cfg   Config
	vad   *dsp.VAD
	tone  tone
	frame int // samples per frame

	// Limits in frames.
	initialSilence, afterGreeting, maxGreeting, minWord, betweenWords int
	maxAnalysis, beepMin, maxBeep, endSilence, beepWait               int

	n        int    // frames processed
	result   Result // current verdict
	decided  int    // frame of the first verdict other than Undecided
	speech   int    // consecutive speech frames
	silence  int    // consecutive non-speech frames
	inWord   bool
	words    int
	greetAt  int // frame the first word started, -1 before
	lastWord int // frame the last word's speech was last heard
	machine  int // frame Machine was decided
	toneRun  int // consecutive tone frames
	toneMiss int // non-tone frames inside the current tone
	toneFreq float64
}

// New returns a Detector for cfg, or an error naming the invalid field.
func New(cfg Config) (*Detector, error) {
	cfg = cfg.withDefaults()
	if cfg.SampleRate < 8000 || cfg.SampleRate > 48000 || cfg.SampleRate%50 != 0 {
		return nil, fmt.Errorf("amd: sample rate %d: %w", cfg.SampleRate, ErrConfig)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"InitialSilence", cfg.InitialSilence}, {"AfterGreetingSilence", cfg.AfterGreetingSilence}, {"MaxGreeting", cfg.MaxGreeting},
		{"MinWord", cfg.MinWord}, {"BetweenWords", cfg.BetweenWords}, {"MaxAnalysis", cfg.MaxAnalysis}, {"BeepMin", cfg.BeepMin},
		{"MaxBeep", cfg.MaxBeep}, {"EndSilence", cfg.EndSilence}, {"BeepWait", cfg.BeepWait}} {
		if d.v < 0 {
			return nil, fmt.Errorf("amd: %s %v: %w", d.name, d.v, ErrConfig)
		}
	}
	if cfg.MaxWords < 0 {
		return nil, fmt.Errorf("amd: MaxWords %d: %w", cfg.MaxWords, ErrConfig)
	}
	// Hangover bridges the VAD's frame-to-frame flicker inside words.
	vad, err := dsp.NewVAD(dsp.VADConfig{SampleRate: cfg.SampleRate, Hangover: 2})
	if err != nil {
		return nil, fmt.Errorf("amd: %w", err)
	}
	d := &Detector{cfg: cfg, vad: vad, frame: cfg.SampleRate / 50,
		initialSilence: frames(cfg.InitialSilence), afterGreeting: frames(cfg.AfterGreetingSilence),
		maxGreeting: frames(cfg.MaxGreeting), minWord: frames(cfg.MinWord), betweenWords: frames(cfg.BetweenWords),
		maxAnalysis: frames(cfg.MaxAnalysis), beepMin: max(1, int(cfg.BeepMin/FrameDuration)), maxBeep: frames(cfg.MaxBeep),
		endSilence: frames(cfg.EndSilence), beepWait: frames(cfg.BeepWait)}
	d.tone.init(cfg.SampleRate)
	d.Reset()
	return d, nil
}

// Reset forgets the call: the Detector starts over as if new.
func (d *Detector) Reset() {
	d.vad.Reset()
	d.n, d.result, d.decided = 0, Undecided, 0
	d.speech, d.silence, d.inWord, d.words = 0, 0, false, 0
	d.greetAt, d.lastWord, d.machine = -1, 0, 0
	d.toneRun, d.toneMiss, d.toneFreq = 0, 0, 0
}

// Result returns the current verdict.
func (d *Detector) Result() Result { return d.result }

// Elapsed returns the audio analysed so far.
func (d *Detector) Elapsed() time.Duration { return time.Duration(d.n) * FrameDuration }

// DecidedAfter returns the audio it took to reach the first verdict
// other than Undecided (0 while undecided).
func (d *Detector) DecidedAfter() time.Duration {
	if d.result == Undecided {
		return 0
	}
	return time.Duration(d.decided) * FrameDuration
}

// Words returns the bursts of speech counted in the greeting.
func (d *Detector) Words() int { return d.words }

// Process analyses the next 20 ms frame (SampleRate/50 samples; only
// read) and returns the verdict so far. Once it is final, frames are no
// longer analysed.
func (d *Detector) Process(frame []int16) (Result, error) {
	if len(frame) != d.frame {
		return d.result, fmt.Errorf("amd: %d samples: %w", len(frame), ErrFrameSize)
	}
	if d.result.Final() {
		return d.result, nil
	}
	d.n++
	if r := d.beep(frame); r != Undecided {
		return d.set(r), nil
	}
	speech := d.vad.Process(frame).Speech || d.toneRun > 0
	if speech {
		d.speech++
		d.silence = 0
		if !d.inWord && d.speech >= d.minWord {
			d.inWord = true
			d.words++
			if d.greetAt < 0 {
				d.greetAt = d.n - d.speech
			}
		}
		if d.inWord {
			d.lastWord = d.n
		}
	} else {
		d.silence++
		if d.silence >= d.betweenWords {
			d.speech = 0
			d.inWord = false
		}
	}
	if d.result == Machine {
		switch {
		case d.silence >= d.endSilence, d.n-d.machine >= d.beepWait:
			return d.set(GreetingEnded), nil
		}
		return Machine, nil
	}
	if d.toneRun > 0 {
		return Undecided, nil // a tone in progress may be the beep
	}
	switch {
	case d.greetAt >= 0 && d.lastWord-d.greetAt >= d.maxGreeting:
		return d.set(Machine), nil
	case d.words >= d.cfg.MaxWords && d.cfg.MaxWords > 0:
		return d.set(Machine), nil
	case d.greetAt >= 0 && d.silence >= d.afterGreeting:
		return d.set(Human), nil
	case d.greetAt < 0 && d.n >= d.initialSilence && d.speech == 0:
		return d.set(Unknown), nil
	case d.n >= d.maxAnalysis:
		return d.set(Unknown), nil
	}
	return Undecided, nil
}

// set records verdict r.
func (d *Detector) set(r Result) Result {
	if d.result == Undecided {
		d.decided = d.n
	}
	if r == Machine && d.result != Machine {
		d.machine = d.n
	}
	d.result = r
	return r
}

// beep follows tones from frame to frame and returns Beep when one that
// lasted at least BeepMin stops (or has lasted MaxBeep), else Undecided.
func (d *Detector) beep(frame []int16) Result {
	f, ok := d.tone.detect(frame)
	if ok && d.toneRun > 0 && !sameFreq(f, d.toneFreq) {
		// Another tone: a melody or a chirp, not one beep. Start over.
		if d.toneRun >= d.beepMin {
			return Beep
		}
		d.toneRun, d.toneMiss = 0, 0
	}
	if ok {
		if d.toneRun == 0 {
			d.toneFreq = f
		}
		d.toneRun++
		d.toneMiss = 0
		if d.toneRun >= d.maxBeep {
			return Beep
		}
		return Undecided
	}
	if d.toneRun == 0 {
		return Undecided
	}
	// One missing frame (a lost packet's concealment) does not end a
	// tone; a second does.
	d.toneMiss++
	if d.toneMiss < 2 {
		return Undecided
	}
	run := d.toneRun
	d.toneRun, d.toneMiss = 0, 0
	if run >= d.beepMin {
		return Beep
	}
	return Undecided
}

// sameFreq reports whether two frame frequencies belong to one tone:
// within 3%.
func sameFreq(a, b float64) bool {
	diff := a - b
	if diff < 0 {
		diff = -diff
	}
	return diff <= 0.03*b
}
