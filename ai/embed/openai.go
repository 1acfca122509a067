package embed

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

	"github.com/voiced/voiced/ai"
	"github.com/voiced/voiced/ai/internal/oai"
)

// OpenAIConfig configures an OpenAI-compatible embeddings client.
type OpenAIConfig struct {
	// BaseURL is the API root, up to and including "/v1"; default
	// "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty. OPENAI_API_KEY and
	// the other OPENAI_* variables are not read.
	APIKey string
	// Model is the embedding model; default "text-embedding-3-small".
	Model string
	// Dimensions asks for vectors this long, for models that can shorten
	// them (text-embedding-3-*); 0 leaves the model's own.
	Dimensions int
	// HTTPClient sends the requests; default a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Timeout bounds one Embed call, retries included; default 30 s.
	Timeout time.Duration
}

// OpenAI is a client of the OpenAI embeddings protocol, through openai-go.
// It is safe for concurrent use.
type OpenAI struct {
	cfg        OpenAIConfig
	embeddings openai.EmbeddingService
}

// Embeddings are computed off the call's audio path (indexing, a lookup
// the agent waits on once), so openai-go's retries stay at their default,
// within Timeout.
const maxRetries = 2

// NewOpenAI returns a client for cfg, with defaults filled in. It fails if
// BaseURL is not an absolute http(s) URL, or Dimensions or Timeout is
// negative.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = oai.DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = "text-embedding-3-small"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Timeout < 0 || cfg.Dimensions < 0 {
		return nil, fmt.Errorf("embed: negative timeout %v or dimensions %d", cfg.Timeout, cfg.Dimensions)
	}
	opts, err := oai.Options(oai.Config{Service: "embed", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: cfg.HTTPClient, MaxRetries: maxRetries})
	if err != nil {
		return nil, err
	}
	return &OpenAI{cfg: cfg, embeddings: openai.NewEmbeddingService(opts...)}, nil
}

// Embed sends texts in one request and returns their vectors in order. An
// HTTP error status returns an *ai.APIError with the server's message.
func (c *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, ErrNoInput
	}
	for i, t := range texts {
		if t == "" {
			return nil, fmt.Errorf("%w: text %d is empty", ErrNoInput, i)
		}
	}
	params := openai.EmbeddingNewParams{
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model: c.cfg.Model,
	}
	if c.cfg.Dimensions > 0 {
		params.Dimensions = param.NewOpt(int64(c.cfg.Dimensions))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.Timeout, ai.ErrTimeout)
	defer cancel()
	var res *http.Response
	out, err := c.embeddings.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		endpoint := c.cfg.BaseURL + "/embeddings"
		if cause := context.Cause(ctx); cause != nil {
			if errors.Is(cause, ai.ErrTimeout) {
				return nil, fmt.Errorf("embed: POST %s: %w after %v", endpoint, ai.ErrTimeout, c.cfg.Timeout)
			}
			return nil, fmt.Errorf("embed: POST %s: %w", endpoint, cause)
		}
		if ae := oai.HTTPError("embed", res, err); ae != nil {
			return nil, ae
		}
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &typ) {
			return nil, fmt.Errorf("embed: POST %s: %w: %w", endpoint, ai.ErrMalformed, err)
		}
		return nil, fmt.Errorf("embed: POST %s: %w", endpoint, err)
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || int(d.Index) >= len(vecs) || vecs[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("%w: embeddings: bad or repeated index %d", ai.ErrMalformed, d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		vecs[d.Index] = v
	}
	for i, v := range vecs {
		if v == nil {
			return nil, fmt.Errorf("%w: embeddings: no vector for text %d", ai.ErrMalformed, i)
		}
	}
	return vecs, nil
}
