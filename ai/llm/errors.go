package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/voiced/voiced/ai/internal/apierr"
)

// ErrNoMessages is returned by Stream for a Request with no messages.
var ErrNoMessages = errors.New("llm: request has no messages")

// ErrUnauthorized classifies an APIError for HTTP 401 or 403: the key is
// missing, wrong or lacks access to the model.
var ErrUnauthorized = errors.New("llm: unauthorized")

// ErrRateLimited classifies an APIError for HTTP 429: too many requests or
// no quota left. Retrying later may succeed.
var ErrRateLimited = errors.New("llm: rate limited")

// ErrBadRequest classifies an APIError for the other 4xx statuses: the
// request (model name, messages, tool schema) was refused as it is.
var ErrBadRequest = errors.New("llm: request refused")

// ErrServer classifies an APIError for 5xx statuses and errors the server
// reports in the middle of a stream. Retrying may succeed.
var ErrServer = errors.New("llm: server error")

// ErrTimeout means the server sent no response headers within the
// configured Timeout.
var ErrTimeout = errors.New("llm: no response before the timeout")

// ErrTruncated means the stream ended before the server said it was done
// (no finish reason and no "[DONE]"): the connection was cut.
var ErrTruncated = errors.New("llm: stream ended before the answer finished")

// ErrMalformed means the server sent something that is not the protocol: an
// event that is not JSON, or an event larger than the limit.
var ErrMalformed = errors.New("llm: malformed response")

// APIError is an error the provider reported, with its own message. It
// unwraps to ErrUnauthorized, ErrRateLimited, ErrBadRequest or ErrServer by
// status.
type APIError struct {
	// StatusCode is the HTTP status; 0 for an error event inside a stream
	// that started with 200.
	StatusCode int
	// Type and Code are the provider's classification when it gives one
	// ("invalid_request_error", "model_not_found").
	Type, Code string
	// Message is the provider's explanation, or the status text when the
	// body held none.
	Message string
}

// Error returns the status and the provider's message.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d: ", e.StatusCode)
	}
	b.WriteString(e.Message)
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	return b.String()
}

// Unwrap returns the sentinel for the status.
func (e *APIError) Unwrap() error {
	switch {
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return ErrUnauthorized
	case e.StatusCode == http.StatusTooManyRequests:
		return ErrRateLimited
	case e.StatusCode >= 400 && e.StatusCode < 500:
		return ErrBadRequest
	}
	return ErrServer
}

// parseAPIError turns a failed response into an APIError
// (ai/internal/apierr knows the servers' body shapes).
func parseAPIError(status int, body []byte) *APIError {
	b := apierr.Parse(status, body)
	return &APIError{StatusCode: status, Type: b.Type, Code: b.Code, Message: b.Message}
}

// ErrClosed is returned by Recv after Close.
var ErrClosed = errors.New("llm: stream closed")
