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
	// Partial, when set, is called on the caller's goroutine with each
	// piece of text a provider that streams its answer recognizes, in
	// order, before Transcribe returns (the pieces concatenated are the
	// transcript, up to spacing). Providers that do not stream never call
	// it; the Result is the transcript either way.
	Partial func(delta string)
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

// Streamer is a Transcriber that can also decode a segment while it is
// spoken, so that its transcript is ready as soon as the segment ends
// (*pocketsphinx.Recognizer and *pocketsphinx.Pool). Providers that only
// transcribe whole segments (*OpenAI: its transcriptions endpoint takes a
// finished file) are Transcribers only.
type Streamer interface {
	Transcriber
	// Stream begins a segment; r.PCM, if any, is its first audio. The
	// stream holds decoding resources until Finish or Close.
	Stream(ctx context.Context, r Request) (Stream, error)
}

// Preparer is a Streamer whose decoding resources take long to make
// (*pocketsphinx.Pool: a third of a second per recognizer, one at a
// time): Prepare tells it a session that will stream has begun, so it
// can make them in the background before the session's first segment,
// and returns the function that says the session ended. It returns at
// once.
type Preparer interface {
	Prepare() (done func())
}

// Stream is one segment being transcribed as its audio arrives. Its
// methods are for one goroutine at a time.
type Stream interface {
	// Write decodes the segment's next samples (16 kHz PCM16 mono), only
	// read during the call.
	Write(pcm []int16) error
	// Partial returns the words heard so far: the current best
	// hypothesis, which later audio may still change.
	Partial() string
	// Finish ends the segment and returns its transcript, releasing the
	// stream's resources. It blocks until done or ctx ends.
	Finish(ctx context.Context) (Result, error)
	// Close abandons the segment without a transcript, releasing its
	// resources. It is idempotent and a no-op after Finish.
	Close() error
}
