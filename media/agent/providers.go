package agent

import (
	"context"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/tts"
)

// LLM streams chat completions (llm.Provider: *llm.OpenAI, *llm.Echo).
type LLM interface {
	Stream(ctx context.Context, r llm.Request) (llm.Stream, error)
}

// TTS turns text into speech (tts.Synthesizer: *espeak.Synth,
// *tts.OpenAI). Requests carry the session's Voice as given: transports
// map catalog names to provider voices.
type TTS interface {
	Synthesize(ctx context.Context, r tts.Request) (tts.Audio, error)
}

// STT transcribes caller turns (stt.Transcriber). An empty text means no
// words were heard.
type STT interface {
	Transcribe(ctx context.Context, r stt.Request) (stt.Result, error)
}

// ToolRunner executes function tools on the server side (a saved agent's
// webhook-routed tools). Without one, tool calls are delivered to the
// client, which answers with a function_call_output item.
type ToolRunner interface {
	// RunTool executes call and returns its output (any text, usually
	// JSON). An error is reported to the model as the tool's failure.
	RunTool(ctx context.Context, call llm.ToolCall) (string, error)
}

// ToolGrower is a ToolRunner whose tools grow during a call: running a
// tool may make more tools callable (an MCP tool_search loads tool
// definitions on demand). The session offers GrownTools, after
// Config.Tools, in every later model request. Safe for concurrent use.
type ToolGrower interface {
	GrownTools() []llm.Tool
}

// Sink receives a session's events, in order, on the session's loop
// goroutine. Event must not block: transports queue the event for their
// writer.
type Sink interface {
	Event(e Event)
}
