package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// OpenAIConfig configures an OpenAI-compatible chat completions client. The
// zero value reaches api.openai.com with no key, which only works through a
// proxy that adds one; Ollama, vLLM and llama.cpp servers are reached by
// their BaseURL ("http://localhost:11434/v1", "http://localhost:8000/v1",
// "http://localhost:8080/v1").
type OpenAIConfig struct {
	// BaseURL is the API root, up to and including "/v1"; default
	// "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty (local servers need
	// none).
	APIKey string
	// Model is used when a Request names none; default "gpt-4o-mini".
	Model string
	// HTTPClient sends the requests; default a client on
	// http.DefaultTransport with no overall timeout (a stream lasts as long
	// as the answer).
	HTTPClient *http.Client
	// Timeout bounds the wait for the response headers, which these servers
	// send with or just before the first token; default 60 s. The stream
	// after that is bounded by the caller's context only.
	Timeout time.Duration
	// NoStreamUsage leaves out "stream_options": {"include_usage": true},
	// for servers that reject it. Usage is then not reported.
	NoStreamUsage bool
}

const (
	defaultBaseURL = "https://api.openai.com/v1"
	defaultModel   = "gpt-4o-mini"
	defaultTimeout = 60 * time.Second
	// maxErrorBody caps how much of an error response is read.
	maxErrorBody = 64 << 10
)

func (c OpenAIConfig) withDefaults() OpenAIConfig {
	if c.BaseURL == "" {
		c.BaseURL = defaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Model == "" {
		c.Model = defaultModel
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	return c
}

// OpenAI is a client of the OpenAI chat completions protocol. It is safe for
// concurrent use.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
}

// NewOpenAI returns a client for cfg, with defaults filled in. It fails if
// BaseURL is not an absolute http(s) URL or Timeout is negative.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	cfg = cfg.withDefaults()
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: base URL %q: want an absolute http or https URL", cfg.BaseURL)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("llm: negative timeout %v", cfg.Timeout)
	}
	return &OpenAI{cfg: cfg, endpoint: cfg.BaseURL + "/chat/completions"}, nil
}

// Model returns the model used when a Request names none.
func (c *OpenAI) Model() string { return c.cfg.Model }

// Stream sends r and returns the streamed answer once the server has
// accepted it (a 2xx status). An HTTP error status returns an *APIError with
// the server's message. ctx bounds the whole stream.
func (c *OpenAI) Stream(ctx context.Context, r Request) (Stream, error) {
	if len(r.Messages) == 0 {
		return nil, ErrNoMessages
	}
	body, err := json.Marshal(c.wireRequest(r))
	if err != nil {
		return nil, fmt.Errorf("llm: encode request: %w", err)
	}
	// sctx lives as long as the stream; the timer cancels it if the
	// headers are late.
	sctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("llm: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	timer := time.AfterFunc(c.cfg.Timeout, func() { cancel(ErrTimeout) })
	resp, err := c.cfg.HTTPClient.Do(req)
	timer.Stop()
	if err != nil {
		cause := context.Cause(sctx)
		cancel(nil)
		if errors.Is(cause, ErrTimeout) {
			return nil, fmt.Errorf("llm: POST %s: %w after %v", c.endpoint, ErrTimeout, c.cfg.Timeout)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("llm: POST %s: %w", c.endpoint, context.Cause(ctx))
		}
		return nil, fmt.Errorf("llm: POST %s: %w", c.endpoint, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		cancel(nil)
		return nil, parseAPIError(resp.StatusCode, b)
	}
	return newSSEStream(sctx, cancel, resp.Body), nil
}

// The wire shapes of the chat completions request.
type (
	wireRequest struct {
		Model         string         `json:"model"`
		Messages      []wireMessage  `json:"messages"`
		Tools         []wireTool     `json:"tools,omitempty"`
		Temperature   *float64       `json:"temperature,omitempty"`
		MaxTokens     int            `json:"max_tokens,omitempty"`
		Stream        bool           `json:"stream"`
		StreamOptions *streamOptions `json:"stream_options,omitempty"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	wireMessage struct {
		Role string `json:"role"`
		// Content is null for an assistant turn that only called tools.
		Content    *string        `json:"content"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireTool struct {
		Type     string      `json:"type"`
		Function wireToolDef `json:"function"`
	}
	wireToolDef struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
)

func (c *OpenAI) wireRequest(r Request) wireRequest {
	w := wireRequest{
		Model:       r.Model,
		Messages:    make([]wireMessage, len(r.Messages)),
		Temperature: r.Temperature,
		MaxTokens:   r.MaxTokens,
		Stream:      true,
	}
	if w.Model == "" {
		w.Model = c.cfg.Model
	}
	if !c.cfg.NoStreamUsage {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for i, m := range r.Messages {
		wm := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			content := m.Content
			wm.Content = &content
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}})
		}
		w.Messages[i] = wm
	}
	for _, t := range r.Tools {
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	return w
}
