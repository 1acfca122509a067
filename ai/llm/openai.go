package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/voiced/voiced/ai/internal/oai"
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
	// none). OPENAI_API_KEY and the other OPENAI_* variables are not read.
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
	defaultModel   = "gpt-4o-mini"
	defaultTimeout = 60 * time.Second
)

func (c OpenAIConfig) withDefaults() OpenAIConfig {
	if c.BaseURL == "" {
		c.BaseURL = oai.DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Model == "" {
		c.Model = defaultModel
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	return c
}

// OpenAI is a client of the OpenAI chat completions protocol, through
// openai-go. It is safe for concurrent use.
type OpenAI struct {
	cfg  OpenAIConfig
	chat openai.ChatCompletionService
}

// NewOpenAI returns a client for cfg, with defaults filled in. It fails if
// BaseURL is not an absolute http(s) URL or Timeout is negative.
//
// A failed request is not retried: a turn's answer that comes seconds late
// is no better than an error the agent can speak over (docs/decisions.md).
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	cfg = cfg.withDefaults()
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("llm: negative timeout %v", cfg.Timeout)
	}
	opts, err := oai.Options(oai.Config{Service: "llm", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return nil, err
	}
	return &OpenAI{cfg: cfg, chat: openai.NewChatCompletionService(opts...)}, nil
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
	params, err := c.params(r)
	if err != nil {
		return nil, err
	}
	// sctx lives as long as the stream; the timer cancels it if the
	// headers are late.
	sctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(c.cfg.Timeout, func() { cancel(ErrTimeout) })
	var res *http.Response
	st := c.chat.NewStreaming(sctx, params, option.WithResponseInto(&res))
	timer.Stop()
	if err := st.Err(); err != nil {
		cause := context.Cause(sctx)
		cancel(nil)
		endpoint := c.cfg.BaseURL + "/chat/completions"
		switch {
		case errors.Is(cause, ErrTimeout):
			return nil, fmt.Errorf("llm: POST %s: %w after %v", endpoint, ErrTimeout, c.cfg.Timeout)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("llm: POST %s: %w", endpoint, context.Cause(ctx))
		}
		if ae := oai.HTTPError("llm", res, err); ae != nil {
			return nil, ae
		}
		return nil, fmt.Errorf("llm: POST %s: %w", endpoint, err)
	}
	return newStream(sctx, cancel, st), nil
}

// params builds the request. Content is null, not absent, for an assistant
// turn that only called tools, as the protocol has it and some servers
// require; max_tokens is sent rather than max_completion_tokens, which
// Ollama, vLLM and llama.cpp do not all read.
func (c *OpenAI) params(r Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:    r.Model,
		Messages: make([]openai.ChatCompletionMessageParamUnion, len(r.Messages)),
	}
	if p.Model == "" {
		p.Model = c.cfg.Model
	}
	if r.Temperature != nil {
		p.Temperature = param.NewOpt(*r.Temperature)
	}
	if r.MaxTokens > 0 {
		p.MaxTokens = param.NewOpt(int64(r.MaxTokens))
	}
	if !c.cfg.NoStreamUsage {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	}
	for i, m := range r.Messages {
		var u openai.ChatCompletionMessageParamUnion
		switch m.Role {
		case RoleSystem:
			u = openai.SystemMessage(m.Content)
		case RoleUser:
			u = openai.UserMessage(m.Content)
		case RoleTool:
			u = openai.ToolMessage(m.Content, m.ToolCallID)
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			} else {
				a.Content.OfString = param.Null[string]()
			}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			u = openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
		default:
			return p, fmt.Errorf("%w: message %d: unknown role %q", ErrBadRequest, i, m.Role)
		}
		p.Messages[i] = u
	}
	for _, t := range r.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = param.NewOpt(t.Description)
		}
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &def.Parameters); err != nil {
				return p, fmt.Errorf("%w: tool %q: parameters: %v", ErrBadRequest, t.Name, err)
			}
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	return p, nil
}
