package tts

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Request is one text to speak.
type Request struct {
	// Text is the text to speak, UTF-8.
	Text string
	// Voice names the voice in the provider's terms ("en-us+f3" for
	// espeak-ng, "alloy" for OpenAI); empty picks from Language, then the
	// provider's default.
	Voice string
	// Language is a BCP-47 tag ("en-US"), used to pick a voice when Voice is
	// empty.
	Language string
	// SampleRate of the Audio in Hz: 16000 or 24000 (also 8000 or 48000).
	SampleRate int
	// Speed scales the speaking rate: 1 (or 0) is the voice's normal pace,
	// 0.5 half as fast, 2 twice as fast. Providers clamp it to what they
	// support.
	Speed float64
}

// Validate checks a Request's sample rate and speed, as every provider does
// before it starts; the errors wrap ErrUnsupportedRate or ErrBadRequest.
func (r Request) Validate() error {
	switch r.SampleRate {
	case 8000, 16000, 24000, 48000:
	default:
		return fmt.Errorf("%w: %d Hz", ErrUnsupportedRate, r.SampleRate)
	}
	if r.Speed < 0 {
		return fmt.Errorf("%w: negative speed %v", ErrBadRequest, r.Speed)
	}
	return nil
}

// Audio is synthesized speech being streamed.
type Audio interface {
	// Read fills p with the next samples, PCM16 mono at the request's
	// SampleRate, blocking until at least one is available; it returns
	// io.EOF after the last sample. Reads may return fewer samples than
	// len(p).
	Read(p []int16) (int, error)
	// Close stops the synthesis early and releases its resources. Read then
	// fails. Close is safe to call from another goroutine and more than
	// once.
	Close() error
}

// ReadAll reads a to its end and closes it: the whole of a short
// synthesis (a test clip, a simulated caller's line).
func ReadAll(a Audio) ([]int16, error) {
	defer a.Close()
	var pcm []int16
	buf := make([]int16, 4096)
	for {
		n, err := a.Read(buf)
		pcm = append(pcm, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return pcm, nil
		}
		if err != nil {
			return pcm, err
		}
	}
}

// Synthesizer is a text-to-speech provider; *espeak.Synth and *OpenAI are
// Synthesizers.
type Synthesizer interface {
	// Synthesize starts speaking r and returns its Audio. ctx bounds the
	// whole synthesis: when it is done, the Audio's Read fails.
	Synthesize(ctx context.Context, r Request) (Audio, error)
}
