package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/voiced/voiced/ai/internal/oai"
)

// stream turns openai-go's chunk stream into Chunks: text deltas as they
// come, tool calls assembled from their deltas and emitted when the model
// finishes, then the finish reason with the usage.
type stream struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	st     *ssestream.Stream[openai.ChatCompletionChunk]
	closed atomic.Bool

	pending []Chunk // decoded, not yet returned by Recv
	calls   []partialCall
	finish  string
	usage   *Usage
	err     error // returned once pending is empty: io.EOF at the end
}

// partialCall is a tool call being assembled from deltas; index is the
// server's tool_calls[].index.
type partialCall struct {
	index int64
	call  ToolCall
}

func newStream(ctx context.Context, cancel context.CancelCauseFunc, st *ssestream.Stream[openai.ChatCompletionChunk]) *stream {
	// Cancelling the request's context aborts a read in progress; closing
	// the body releases the connection even if Recv is never called again.
	context.AfterFunc(ctx, func() { _ = st.Close() })
	return &stream{ctx: ctx, cancel: cancel, st: st}
}

// Recv returns the next chunk (see Stream).
func (s *stream) Recv() (Chunk, error) {
	for {
		if len(s.pending) > 0 {
			c := s.pending[0]
			s.pending[0] = Chunk{}
			s.pending = s.pending[1:]
			return c, nil
		}
		if s.err != nil {
			return Chunk{}, s.err
		}
		if !s.st.Next() {
			s.err = s.end(s.st.Err())
			// Done, failed or cut: release the connection now, not at Close.
			s.cancel(ErrClosed)
			continue
		}
		s.add(s.st.Current())
	}
}

// Close stops the stream (see Stream).
func (s *stream) Close() error {
	if !s.closed.Swap(true) {
		s.cancel(ErrClosed)
	}
	return nil
}

// end queues the last chunk and returns io.EOF when the stream ended as the
// protocol has it, or returns the error that ended it.
func (s *stream) end(err error) error {
	if cause := context.Cause(s.ctx); cause != nil {
		return cause
	}
	if ae := oai.StreamError("llm", err); ae != nil {
		return ae
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax) || errors.As(err, &typ):
		return fmt.Errorf("%w: event is not a chat.completion.chunk: %v", ErrMalformed, err)
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	case err != nil:
		return fmt.Errorf("llm: read stream: %w", err)
	case s.finish == "":
		return ErrTruncated
	}
	s.flushCalls()
	s.pending = append(s.pending, Chunk{FinishReason: s.finish, Usage: s.usage})
	return io.EOF
}

// add queues the chunks one event brings.
func (s *stream) add(ev openai.ChatCompletionChunk) {
	if ev.JSON.Usage.Valid() {
		u := ev.Usage
		s.usage = &Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens)}
	}
	for _, ch := range ev.Choices {
		if ch.Index != 0 {
			continue // only one choice is requested
		}
		if ch.Delta.Content != "" {
			s.pending = append(s.pending, Chunk{Text: ch.Delta.Content})
		}
		for _, d := range ch.Delta.ToolCalls {
			p := s.callFor(d.Index, d.JSON.Index.Valid(), d.ID)
			if p.call.ID == "" {
				p.call.ID = d.ID
			}
			// The name comes whole in the first delta; some servers repeat it.
			if n := d.Function.Name; n != "" && n != p.call.Name {
				p.call.Name += n
			}
			p.call.Arguments += d.Function.Arguments
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
			s.flushCalls()
		}
	}
}

// callFor returns the call a delta continues: by index when the server
// sends one (OpenAI, vLLM, llama.cpp, Ollama), else a new call when the delta
// brings a new id and the last call otherwise.
func (s *stream) callFor(index int64, hasIndex bool, id string) *partialCall {
	if hasIndex {
		for i := range s.calls {
			if s.calls[i].index == index {
				return &s.calls[i]
			}
		}
		s.calls = append(s.calls, partialCall{index: index})
		return &s.calls[len(s.calls)-1]
	}
	if n := len(s.calls); n > 0 && (id == "" || s.calls[n-1].call.ID == id) {
		return &s.calls[n-1]
	}
	next := int64(0)
	for _, c := range s.calls {
		next = max(next, c.index+1)
	}
	s.calls = append(s.calls, partialCall{index: next})
	return &s.calls[len(s.calls)-1]
}

// flushCalls queues the assembled tool calls in index order.
func (s *stream) flushCalls() {
	for len(s.calls) > 0 {
		lo := 0
		for i := range s.calls {
			if s.calls[i].index < s.calls[lo].index {
				lo = i
			}
		}
		c := s.calls[lo].call
		if c.Arguments == "" {
			c.Arguments = "{}"
		}
		s.pending = append(s.pending, Chunk{ToolCall: &c})
		s.calls = append(s.calls[:lo], s.calls[lo+1:]...)
	}
}
