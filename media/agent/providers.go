package agent

import (
	"context"

	"github.com/voiced/voiced/ai/llm"
)

// LLM streams chat completions (llm.Provider: *llm.OpenAI, *llm.Echo).
type LLM interface {
	Stream(ctx context.Context, r llm.Request) (llm.Stream, error)
}

// SpeechRequest asks a TTS for one piece of speech.
type SpeechRequest struct {
	Text     string
	Voice    string
	Language string
	// SampleRate is the rate the audio must come at: the session's
	// OutputRate.
	SampleRate int
}

// Speech is synthesized audio, read as it is made. Read returns io.EOF
// after the last sample; Close may be called at any time, also from another
// goroutine, to stop synthesis.
type Speech interface {
	Read(p []int16) (int, error)
	Close() error
}

// TTS turns text into speech.
type TTS interface {
	Synthesize(ctx context.Context, r SpeechRequest) (Speech, error)
}

// TranscribeRequest asks an STT for the words of one caller turn.
type TranscribeRequest struct {
	// PCM is the turn's audio at 16 kHz. The STT must not keep it.
	PCM      []int16
	Language string
	// Prompt biases recognition (words to expect); may be empty.
	Prompt string
}

// STT transcribes caller turns. An empty text means no words were heard.
type STT interface {
	Transcribe(ctx context.Context, r TranscribeRequest) (string, error)
}

// ToolRunner executes function tools on the server side (a saved agent's
// webhook-routed tools). Without one, tool calls are delivered to the
// client, which answers with a function_call_output item.
type ToolRunner interface {
	// RunTool executes call and returns its output (any text, usually
	// JSON). An error is reported to the model as the tool's failure.
	RunTool(ctx context.Context, call llm.ToolCall) (string, error)
}

// Sink receives a session's events, in order, on the session's loop
// goroutine. Event must not block: transports queue the event for their
// writer.
type Sink interface {
	Event(e Event)
}
