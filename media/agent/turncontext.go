package agent

import (
	"context"

	"github.com/voiced/voiced/ai/llm"
)

// TurnContext is implemented by a Deps.Tools runner that adds context to
// the model's request before each answer to a caller turn (passages
// retrieved for it, say): no tool round trip, and nothing kept in the
// conversation. TurnContext gets the caller's turn and returns the text
// to add ("" adds nothing); it runs off the session's loop, before the
// model is asked, so the answer waits for it.
type TurnContext interface {
	TurnContext(ctx context.Context, callerText string) string
}

// callerTurn is the text of the caller turn the next answer is to (the
// last user message, past the tool calls answering it), "" when the
// conversation does not end with one; loop goroutine.
func (s *Session) callerTurn() string {
	for i := len(s.items) - 1; i >= 0; i-- {
		switch it := s.items[i]; {
		case it.Type == ItemFunctionCall || it.Type == ItemFunctionCallOutput:
		case it.Type == ItemMessage && it.Role == RoleUser:
			return it.text()
		default:
			return ""
		}
	}
	return ""
}

// withTurnContext adds the runner's context for callerText to req as a
// last system message; generate's goroutine.
func (s *Session) withTurnContext(ctx context.Context, req llm.Request, callerText string) llm.Request {
	tc, ok := s.deps.Tools.(TurnContext)
	if !ok || callerText == "" {
		return req
	}
	if text := tc.TurnContext(ctx, callerText); text != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: text})
	}
	return req
}
