package media

import (
	"fmt"
	"time"
)

// FrameDuration is the length of one frame.
const FrameDuration = 20 * time.Millisecond

// FramesPerSecond is the number of frames in one second of audio.
const FramesPerSecond = int(time.Second / FrameDuration)

// The sample rates the engine carries, in Hz.
const (
	Rate8k  = 8000  // G.711 transports
	Rate16k = 16000 // analysis (VAD, turn-taking, STT), WebSocket PCM
	Rate24k = 24000 // WebSocket PCM, TTS
	Rate48k = 48000 // Opus
)

// ValidateRate returns nil for a supported rate and an error wrapping
// ErrUnsupportedRate otherwise.
func ValidateRate(rate int) error {
	switch rate {
	case Rate8k, Rate16k, Rate24k, Rate48k:
		return nil
	}
	return fmt.Errorf("%d Hz: %w", rate, ErrUnsupportedRate)
}

// SamplesPerFrame returns the number of samples in one 20 ms frame at rate
// (160, 320, 480 or 960), or 0 for an unsupported rate: validate rates with
// ValidateRate where they enter, and a 0 here never reaches a loop.
func SamplesPerFrame(rate int) int {
	if ValidateRate(rate) != nil {
		return 0
	}
	return rate / FramesPerSecond
}

// Frame is 20 ms of mono PCM at Rate. The Samples buffer belongs to whoever
// made the frame; receivers that need the audio later copy it.
type Frame struct {
	// Rate is the sample rate in Hz, one ValidateRate accepts.
	Rate int
	// Samples holds SamplesPerFrame(Rate) samples.
	Samples []int16
}

// NewFrame returns a silent frame at rate with its own buffer.
func NewFrame(rate int) (Frame, error) {
	if err := ValidateRate(rate); err != nil {
		return Frame{}, err
	}
	return Frame{Rate: rate, Samples: make([]int16, SamplesPerFrame(rate))}, nil
}

// Valid reports whether f has a supported rate and exactly one frame of
// samples.
func (f Frame) Valid() bool {
	n := SamplesPerFrame(f.Rate)
	return n > 0 && len(f.Samples) == n
}

// FrameWriter consumes frames, one call per 20 ms of audio: the engine-wide
// contract between stages (a playout, an encoder, a recorder). WriteFrame
// must not keep f.Samples after it returns.
type FrameWriter interface {
	WriteFrame(f Frame) error
}
