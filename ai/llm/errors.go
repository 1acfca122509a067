package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
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

// parseAPIError reads the error shapes of the OpenAI-compatible servers:
// {"error":{"message","type","code"}} (OpenAI, Ollama, llama.cpp, code a
// string or a number), {"error":"text"} (older Ollama) and
// {"object":"error","message","type","code"} (vLLM). Anything else keeps the
// body's first line as the message.
func parseAPIError(status int, body []byte) *APIError {
	e := &APIError{StatusCode: status}
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &top) == nil {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var text string
		switch {
		case json.Unmarshal(top.Error, &text) == nil && text != "":
			e.Message = text
		case json.Unmarshal(top.Error, &inner) == nil && inner.Message != "":
			e.Message, e.Type, e.Code = inner.Message, inner.Type, rawCode(inner.Code)
		case top.Message != "":
			e.Message, e.Type, e.Code = top.Message, top.Type, rawCode(top.Code)
		}
	}
	if e.Message == "" {
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		if len(line) > 200 {
			line = line[:200]
		}
		e.Message = line
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// rawCode renders a JSON string or number code as text; null is "".
func rawCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// ErrClosed is returned by Recv after Close.
var ErrClosed = errors.New("llm: stream closed")
