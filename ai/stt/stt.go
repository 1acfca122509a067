package stt

import "context"

// SampleRate is the rate of Request.PCM: 16 kHz, the analysis rate.
const SampleRate = 16000

// Request is one segment of speech to transcribe.
type Request struct {
	// PCM is the segment, 16 kHz PCM16 mono, as the voice activity
	// detector cut it (with its prefix padding). Providers do not keep it
	// after Transcribe returns.
	PCM []int16
	// Language is a BCP-47 tag ("en-US") the speech is in; empty lets the
	// provider detect or assume it.
	Language string
	// Prompt is text that biases recognition: the conversation so far,
	// names and terms likely to be said. Providers that cannot use it
	// ignore it.
	Prompt string
}

// Result is a transcription.
type Result struct {
	// Text is what was said; empty when nothing was recognized.
	Text string
	// Confidence is the provider's estimate that Text is right, 0 to 1; 0
	// when the provider gives none.
	Confidence float32
}

// Transcriber is a speech-to-text provider; *OpenAI and
// *pocketsphinx.Recognizer are Transcribers.
type Transcriber interface {
	// Transcribe returns the text of one segment. It blocks until done or
	// ctx ends.
	Transcribe(ctx context.Context, r Request) (Result, error)
}
