package llm

import (
	"context"
	"encoding/json"
)

// The message roles of a conversation.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of the conversation sent to the model.
type Message struct {
	// Role is RoleSystem, RoleUser, RoleAssistant or RoleTool.
	Role string
	// Content is the text of the turn; for RoleTool, the tool's result.
	Content string
	// ToolCalls are the calls an assistant turn made (RoleAssistant only).
	ToolCalls []ToolCall
	// ToolCallID names the call a RoleTool message answers.
	ToolCallID string
}

// Tool is a function the model may call.
type Tool struct {
	// Name is the function's name, as the model will call it.
	Name string
	// Description tells the model what the function does and when to use it.
	Description string
	// Parameters is a JSON Schema object describing the arguments; nil means
	// the function takes none.
	Parameters json.RawMessage
}

// ToolCall is one function call made by the model.
type ToolCall struct {
	// ID is the provider's identifier for the call, echoed back in the
	// RoleTool message that answers it.
	ID string
	// Name is the called function's name.
	Name string
	// Arguments is JSON text, as the model wrote it ("{}" when it wrote
	// nothing). Models can write invalid JSON: validate before use.
	Arguments string
}

// Request is one chat completion request.
type Request struct {
	// Model overrides the provider's configured model when not empty.
	Model string
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools are the functions the model may call.
	Tools []Tool
	// Temperature is the sampling temperature; nil leaves the server's
	// default.
	Temperature *float64
	// MaxTokens caps the length of the answer; 0 leaves it to the server.
	MaxTokens int
}

// Chunk is one piece of a streamed answer. Exactly one of Text, ToolCall or
// FinishReason is set, except that the last chunk may carry Usage too.
type Chunk struct {
	// Text is a delta of the answer's text, to be appended to what came
	// before.
	Text string
	// ToolCall is a complete tool call, emitted once all its deltas have
	// arrived (when the model finishes), in the order the model made them.
	ToolCall *ToolCall
	// FinishReason is set on the last chunk only: "stop", "length",
	// "tool_calls", "content_filter" or whatever the server reports.
	FinishReason string
	// Usage is the token accounting, on the last chunk, when the server
	// reports it.
	Usage *Usage
}

// Usage counts the tokens of one completion.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Stream is a streamed answer.
type Stream interface {
	// Recv returns the next chunk; io.EOF after the last one (the one with
	// FinishReason set). It blocks until a chunk arrives, the stream fails
	// or its context is done.
	Recv() (Chunk, error)
	// Close stops the stream and releases its connection. It is safe to call
	// from another goroutine while Recv blocks (Recv then returns an error)
	// and more than once.
	Close() error
}

// Provider is a source of chat completions; *OpenAI and *Echo are
// Providers.
type Provider interface {
	// Stream starts a completion of r. ctx bounds the whole stream: when it
	// is done, the stream's Recv fails and its connection is closed.
	Stream(ctx context.Context, r Request) (Stream, error)
}
