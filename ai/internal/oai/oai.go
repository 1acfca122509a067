// Package oai builds the openai-go options the llm, tts, stt and embed
// clients share, and maps openai-go's failures onto package ai's error
// taxonomy.
//
// The clients use openai-go's per-endpoint services (NewChatCompletionService
// and the like), not openai.NewClient, which would also read OPENAI_API_KEY,
// OPENAI_BASE_URL and other variables from the environment: a voiced
// deployment's key for one provider must not be sent to another's URL.
package oai

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/voiced/voiced/ai"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config is what every client is configured with.
type Config struct {
	// Service names the client in errors: "llm", "tts", "stt", "embed".
	Service string
	// BaseURL is the API root, up to and including "/v1"; it must be an
	// absolute http or https URL (plain http is how local servers are
	// reached).
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// HTTPClient sends the requests; nil is a client on
	// http.DefaultTransport with no overall timeout.
	HTTPClient *http.Client
	// MaxRetries is how many times openai-go retries a request that failed
	// with a connection error, 408, 409, 429 or 5xx, after a backoff; 0
	// sends it once.
	MaxRetries int
	// MaxRetryDelay bounds the backoff; a server asking for a longer wait
	// (Retry-After) gets its error returned at once. 0 leaves openai-go's
	// bounds (8 s backoff, 2 min Retry-After).
	MaxRetryDelay time.Duration
}

// Options returns the openai-go request options for c, or an error if
// BaseURL is not an absolute http(s) URL.
func Options(c Config) ([]option.RequestOption, error) {
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q: want an absolute http or https URL", c.Service, c.BaseURL)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(c.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(c.MaxRetries),
		// A no-op in v3.99 (plain http works); kept so that local servers
		// still do when the announced restriction on sending a key over
		// http returns.
		option.WithUnsafeAllowHTTP(),
	}
	if c.MaxRetryDelay > 0 {
		opts = append(opts, option.WithMaxRetryDelay(c.MaxRetryDelay))
	}
	if c.APIKey != "" {
		opts = append(opts, option.WithAPIKey(c.APIKey))
	}
	return opts, nil
}

// maxErrorBody caps how much of an error response is read.
const maxErrorBody = 64 << 10

// HTTPError returns the *ai.APIError for a request that got an HTTP error
// status, or nil when err is not one. res is the response captured with
// option.WithResponseInto: openai-go returns an *openai.Error only for
// bodies shaped {"error": {...}}, and a JSON decoding error for others
// ({"error": "text"} from older Ollama), so the status and body are read
// from the response, whose body openai-go leaves readable, and parsed by
// Parse, which knows the other servers' shapes.
func HTTPError(service string, res *http.Response, err error) *ai.APIError {
	if err == nil {
		return nil
	}
	var oe *openai.Error
	if errors.As(err, &oe) && oe.Response != nil {
		res = oe.Response
	}
	if res == nil || res.StatusCode < 400 {
		if oe != nil {
			return &ai.APIError{Service: service, StatusCode: oe.StatusCode, Type: oe.Type, Code: oe.Code, Message: oe.Message}
		}
		return nil
	}
	var body []byte
	if res.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	}
	b := Parse(res.StatusCode, body)
	return &ai.APIError{Service: service, StatusCode: res.StatusCode, Type: b.Type, Code: b.Code, Message: b.Message}
}

// StreamError returns the *ai.APIError for an error event inside a stream
// (openai-go's *ssestream.StreamError), or nil when err is not one.
func StreamError(service string, err error) *ai.APIError {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return nil
	}
	b := Parse(0, se.Event.Data)
	return &ai.APIError{Service: service, Type: b.Type, Code: b.Code, Message: b.Message}
}
