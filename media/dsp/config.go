package dsp

import (
	"fmt"
	"time"
)

// NoiseReduction selects the noise suppressor's strength. The names follow
// the API's audio.input.noise_reduction types.
type NoiseReduction int

const (
	// NoiseReductionOff disables noise suppression (the zero value).
	NoiseReductionOff NoiseReduction = iota
	// NearField is moderate suppression for a talker close to the
	// microphone (headsets, handsets): the APM's kModerate level.
	NearField
	// FarField is aggressive suppression for a distant talker in a noisy
	// room (speakerphones, laptops): the APM's kVeryHigh level.
	FarField
)

// String returns the API name of the mode.
func (n NoiseReduction) String() string {
	switch n {
	case NoiseReductionOff:
		return "off"
	case NearField:
		return "near_field"
	case FarField:
		return "far_field"
	}
	return fmt.Sprintf("NoiseReduction(%d)", int(n))
}

// VADLikelihood biases the APM voice detector: a higher likelihood needs more
// evidence before it calls a chunk speech (fewer false alarms, more misses).
type VADLikelihood int

const (
	// VADDefault is the zero value and means VADLow, the APM default.
	VADDefault VADLikelihood = iota
	// VADVeryLow flags speech most readily.
	VADVeryLow
	// VADLow is the APM default.
	VADLow
	// VADModerate needs more evidence.
	VADModerate
	// VADHigh needs the most evidence.
	VADHigh
)

// MaxEchoDelay is the largest EchoDelay: the APM accepts up to 500 ms, but
// with the extended filter cancellation was measured to fail at 500 ms and
// to work at 470 ms.
const MaxEchoDelay = 450 * time.Millisecond

// Config configures a Processor. It is plain values, taken by value; the
// zero value is a 16 kHz processor that only detects voice.
type Config struct {
	// SampleRate is the rate of near and far frames in Hz: 8000, 16000,
	// 32000 or 48000. Zero means 16000, the analysis rate.
	SampleRate int

	// NoiseReduction selects noise suppression; zero is off.
	NoiseReduction NoiseReduction

	// EchoCancellation enables the acoustic echo canceller, which needs the
	// far-end reference through ProcessFar.
	EchoCancellation bool

	// EchoDelay is the delay between handing a far frame to ProcessFar and
	// handing the near frame that holds its echo to ProcessNear, in
	// [0, MaxEchoDelay]. The canceller's 128 ms filter covers echoes that
	// arrive from about 20 ms before to about 100 ms after EchoDelay, so
	// when in doubt give a slight underestimate. An echo outside that span
	// is not cancelled (the APM's own delay estimation in this version only
	// reaches ~200 ms and is not used).
	EchoDelay time.Duration

	// AGC enables the adaptive digital gain control, which raises quiet
	// speech towards AGCTargetLevel and limits loud peaks.
	AGC bool

	// AGCTargetLevel is the AGC's target peak level in dB below full scale,
	// 1..31. Zero means 3 (-3 dBFS), the APM default.
	AGCTargetLevel int

	// AGCMaxGain is the largest gain the AGC adds, in dB, 1..90. Zero means
	// 20 dB.
	AGCMaxGain int

	// HighPass enables the APM's 80 Hz high-pass filter (removes DC and
	// rumble before the other stages).
	HighPass bool

	// APMVoiceDetection also runs the APM's own voice detector and reports
	// it in Result.APMVoice. Result.Speech does not depend on it.
	APMVoiceDetection bool

	// VADLikelihood biases the APM voice detector; zero means VADLow.
	VADLikelihood VADLikelihood

	// SpeechThreshold is the probability at or above which Result.Speech is
	// true, in (0, 1). Zero means 0.5.
	SpeechThreshold float32
}

const (
	defaultSampleRate      = 16000
	defaultAGCTargetLevel  = 3
	defaultAGCMaxGain      = 20
	defaultSpeechThreshold = 0.5
)

// withDefaults returns c with zero fields replaced by their defaults. It is
// the one place defaults are filled in.
func (c Config) withDefaults() Config {
	if c.SampleRate == 0 {
		c.SampleRate = defaultSampleRate
	}
	if c.AGCTargetLevel == 0 {
		c.AGCTargetLevel = defaultAGCTargetLevel
	}
	if c.AGCMaxGain == 0 {
		c.AGCMaxGain = defaultAGCMaxGain
	}
	if c.VADLikelihood == VADDefault {
		c.VADLikelihood = VADLow
	}
	if c.SpeechThreshold == 0 {
		c.SpeechThreshold = defaultSpeechThreshold
	}
	return c
}

// validate checks a Config that has had its defaults filled in.
func (c Config) validate() error {
	switch c.SampleRate {
	case 8000, 16000, 32000, 48000:
	default:
		return fmt.Errorf("SampleRate %d Hz (want 8000, 16000, 32000 or 48000): %w", c.SampleRate, ErrSampleRate)
	}
	if c.NoiseReduction < NoiseReductionOff || c.NoiseReduction > FarField {
		return fmt.Errorf("NoiseReduction %d is not off, near_field or far_field: %w", int(c.NoiseReduction), ErrConfig)
	}
	if c.EchoDelay < 0 || c.EchoDelay > MaxEchoDelay {
		return fmt.Errorf("EchoDelay %v outside [0, %v]: %w", c.EchoDelay, MaxEchoDelay, ErrConfig)
	}
	if c.AGCTargetLevel < 1 || c.AGCTargetLevel > 31 {
		return fmt.Errorf("AGCTargetLevel %d dBFS outside 1..31: %w", c.AGCTargetLevel, ErrConfig)
	}
	if c.AGCMaxGain < 1 || c.AGCMaxGain > 90 {
		return fmt.Errorf("AGCMaxGain %d dB outside 1..90: %w", c.AGCMaxGain, ErrConfig)
	}
	if c.VADLikelihood < VADVeryLow || c.VADLikelihood > VADHigh {
		return fmt.Errorf("VADLikelihood %d outside VADVeryLow..VADHigh: %w", int(c.VADLikelihood), ErrConfig)
	}
	if !(c.SpeechThreshold > 0 && c.SpeechThreshold < 1) {
		return fmt.Errorf("SpeechThreshold %v outside (0, 1): %w", c.SpeechThreshold, ErrConfig)
	}
	return nil
}
