package llm

import (
	"context"
	"io"
	"strings"
	"time"
)

// EchoConfig configures the Echo provider.
type EchoConfig struct {
	// WordByWord streams the reply one word (with its following spaces) per
	// chunk, as a model would, instead of in one chunk.
	WordByWord bool
	// WordDelay is waited before each chunk, to simulate a model's pace;
	// 0 sends at once.
	WordDelay time.Duration
	// Empty is the reply when the conversation has no user message with
	// text; default "I didn't catch that."
	Empty string
}

// Echo is a Provider that repeats the caller's last user message. It needs
// no model and no key: with it the audio path runs end to end offline. It is
// safe for concurrent use.
type Echo struct {
	cfg EchoConfig
}

// NewEcho returns an Echo provider.
func NewEcho(cfg EchoConfig) *Echo {
	if cfg.Empty == "" {
		cfg.Empty = "I didn't catch that."
	}
	return &Echo{cfg: cfg}
}

// Stream returns the last user message of r as the answer, with
// FinishReason "stop". Tools are never called.
func (e *Echo) Stream(ctx context.Context, r Request) (Stream, error) {
	if len(r.Messages) == 0 {
		return nil, ErrNoMessages
	}
	text := e.cfg.Empty
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == RoleUser && strings.TrimSpace(m.Content) != "" {
			text = strings.TrimSpace(m.Content)
			break
		}
	}
	var parts []string
	if e.cfg.WordByWord {
		parts = splitWords(text)
	} else {
		parts = []string{text}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	return &echoStream{ctx: ctx, cancel: cancel, parts: parts, delay: e.cfg.WordDelay}, nil
}

// splitWords cuts s after each run of spaces, so the parts concatenate back
// to s.
func splitWords(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}

type echoStream struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	parts  []string
	delay  time.Duration
	done   bool
}

func (s *echoStream) Recv() (Chunk, error) {
	if err := context.Cause(s.ctx); err != nil {
		return Chunk{}, err
	}
	if s.done {
		return Chunk{}, io.EOF
	}
	if s.delay > 0 && len(s.parts) > 0 {
		t := time.NewTimer(s.delay)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return Chunk{}, context.Cause(s.ctx)
		}
	}
	if len(s.parts) > 0 {
		p := s.parts[0]
		s.parts = s.parts[1:]
		return Chunk{Text: p}, nil
	}
	s.done = true
	return Chunk{FinishReason: "stop"}, nil
}

func (s *echoStream) Close() error {
	s.cancel(ErrClosed)
	return nil
}
