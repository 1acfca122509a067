package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// maxEvent caps one server-sent event; a tool call's arguments arrive in
// many small events, so a legitimate event is far below it.
const maxEvent = 4 << 20

// sseStream decodes the chat completions event stream (the WHATWG
// server-sent events format: "data:" fields, ":" comments, events ended by
// a blank line; the stream ended by "data: [DONE]").
type sseStream struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	body   io.ReadCloser
	br     *bufio.Reader
	closed atomic.Bool

	line    []byte // a line longer than the bufio buffer, reassembled
	data    []byte // the data field of the event being read
	hasData bool
	event   string // the event field of the event being read

	pending []Chunk // decoded, not yet returned by Recv
	calls   []partialCall
	finish  string
	usage   *Usage
	err     error // returned once pending is empty: io.EOF at the end
}

// partialCall is a tool call being assembled from deltas; index is the
// server's tool_calls[].index.
type partialCall struct {
	index int
	call  ToolCall
}

func newSSEStream(ctx context.Context, cancel context.CancelCauseFunc, body io.ReadCloser) *sseStream {
	s := &sseStream{ctx: ctx, cancel: cancel, body: body, br: bufio.NewReaderSize(body, 16<<10)}
	// Cancellation closes the connection at once, even mid-read.
	context.AfterFunc(ctx, func() { _ = body.Close() })
	return s
}

// Recv returns the next chunk (see Stream).
func (s *sseStream) Recv() (Chunk, error) {
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
		if err := s.next(); err != nil {
			s.err = err
			// Done, failed or cut: release the connection now, not at Close.
			s.cancel(ErrClosed)
		}
	}
}

// Close stops the stream (see Stream).
func (s *sseStream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel(ErrClosed)
	_ = s.body.Close()
	return nil
}

// next reads one event and queues its chunks. It returns io.EOF once the
// final chunk is queued, or the error that ended the stream.
func (s *sseStream) next() error {
	for {
		line, err := s.readLine()
		if err != nil {
			if cause := context.Cause(s.ctx); cause != nil {
				return cause
			}
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("llm: read stream: %w", err)
			}
			if s.hasData {
				return s.dispatch() // the last event lacked its blank line
			}
			if s.finish == "" {
				return ErrTruncated
			}
			return s.end()
		}
		if len(line) == 0 {
			if !s.hasData {
				s.event = ""
				continue
			}
			return s.dispatch()
		}
		if line[0] == ':' {
			continue // a comment: keep-alive or a proxy's note
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
			if len(s.data) > maxEvent {
				return fmt.Errorf("%w: event over %d bytes", ErrMalformed, maxEvent)
			}
		case "event":
			s.event = string(value)
		}
	}
}

// readLine returns the next line without its line ending. The slice is
// valid until the next call.
func (s *sseStream) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.line = append(s.line, frag...)
			if len(s.line) > maxEvent {
				return nil, fmt.Errorf("%w: line over %d bytes", ErrMalformed, maxEvent)
			}
			continue
		}
		line := frag
		if len(s.line) > 0 {
			s.line = append(s.line, frag...)
			line = s.line
		}
		if err != nil && (!errors.Is(err, io.EOF) || len(line) == 0) {
			return nil, err
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		return bytes.TrimSuffix(line, []byte{'\r'}), nil
	}
}

// streamEvent is one chat.completion.chunk, or an error event.
type streamEvent struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// dispatch decodes the event read so far.
func (s *sseStream) dispatch() error {
	data, event := s.data, s.event
	s.data, s.hasData, s.event = s.data[:0], false, ""
	if string(data) == "[DONE]" {
		if s.finish == "" {
			s.finish = "stop" // servers that omit finish_reason
		}
		return s.end()
	}
	var ev streamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("%w: event is not JSON: %v", ErrMalformed, err)
	}
	if event == "error" || (len(ev.Error) > 0 && string(ev.Error) != "null") {
		return parseAPIError(0, data)
	}
	if ev.Usage != nil {
		s.usage = &Usage{PromptTokens: ev.Usage.PromptTokens, CompletionTokens: ev.Usage.CompletionTokens, TotalTokens: ev.Usage.TotalTokens}
	}
	for _, ch := range ev.Choices {
		if ch.Index != 0 {
			continue // only one choice is requested
		}
		if c := ch.Delta.Content; c != nil && *c != "" {
			s.pending = append(s.pending, Chunk{Text: *c})
		}
		for _, d := range ch.Delta.ToolCalls {
			p := s.callFor(d.Index, d.ID)
			if p.call.ID == "" {
				p.call.ID = d.ID
			}
			// The name comes whole in the first delta; some servers repeat it.
			if n := d.Function.Name; n != "" && n != p.call.Name {
				p.call.Name += n
			}
			p.call.Arguments += d.Function.Arguments
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
			s.flushCalls()
		}
	}
	return nil
}

// callFor returns the call a delta continues: by index when the server
// sends one (OpenAI, vLLM, llama.cpp), else a new call when the delta brings
// a new id and the last call otherwise.
func (s *sseStream) callFor(index *int, id string) *partialCall {
	if index != nil {
		for i := range s.calls {
			if s.calls[i].index == *index {
				return &s.calls[i]
			}
		}
		s.calls = append(s.calls, partialCall{index: *index})
		return &s.calls[len(s.calls)-1]
	}
	if n := len(s.calls); n > 0 && (id == "" || s.calls[n-1].call.ID == id) {
		return &s.calls[n-1]
	}
	next := 0
	for _, c := range s.calls {
		next = max(next, c.index+1)
	}
	s.calls = append(s.calls, partialCall{index: next})
	return &s.calls[len(s.calls)-1]
}

// flushCalls queues the assembled tool calls in index order.
func (s *sseStream) flushCalls() {
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

// end queues the last chunk and ends the stream.
func (s *sseStream) end() error {
	s.flushCalls()
	s.pending = append(s.pending, Chunk{FinishReason: s.finish, Usage: s.usage})
	return io.EOF
}
