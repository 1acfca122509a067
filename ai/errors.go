// Package ai holds what the model, speech and transcription clients (ai/llm,
// ai/tts, ai/stt, ai/embed) share: the taxonomy of provider errors their
// callers act on.
//
// Every provider error wraps one of ErrUnauthorized, ErrRateLimited,
// ErrBadRequest or ErrUnavailable (an *APIError carries the server's own
// message), ErrTimeout or ErrMalformed, so a caller tests errors.Is(err,
// ai.ErrRateLimited) whichever client failed. The per-package names
// (llm.ErrRateLimited, tts.ErrServer...) are the same values.
package ai

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

var (
	// ErrUnauthorized classifies an APIError for HTTP 401 or 403: the key
	// is missing, wrong or lacks access to the model.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrRateLimited classifies an APIError for HTTP 429: too many requests
	// or no quota left. Retrying later may succeed.
	ErrRateLimited = errors.New("rate limited")
	// ErrBadRequest classifies an APIError for the other 4xx statuses: the
	// request (model, voice, messages, tool schema) was refused as it is.
	// The clients also return it for requests they refuse before sending.
	ErrBadRequest = errors.New("request refused")
	// ErrUnavailable classifies an APIError for 5xx statuses and errors a
	// server reports in the middle of a stream. Retrying may succeed.
	ErrUnavailable = errors.New("server error")
	// ErrTimeout means the server did not answer within the client's
	// configured Timeout.
	ErrTimeout = errors.New("no response before the timeout")
	// ErrMalformed means the server sent something that is not the
	// protocol.
	ErrMalformed = errors.New("malformed response")
)

// APIError is an error a provider reported, with its own message. It
// unwraps to ErrUnauthorized, ErrRateLimited, ErrBadRequest or
// ErrUnavailable by status.
type APIError struct {
	// Service names the client that got it: "llm", "tts", "stt", "embed".
	Service string
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

// Error returns the service, the status and the provider's message.
func (e *APIError) Error() string {
	var b strings.Builder
	if e.Service != "" {
		b.WriteString(e.Service + ": ")
	}
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
	return ErrUnavailable
}
