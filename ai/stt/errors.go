package stt

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/voiced/voiced/ai/internal/apierr"
)

// ErrNoAudio is returned for a Request with no samples.
var ErrNoAudio = errors.New("stt: no audio")

// ErrBadRequest classifies an APIError for a 4xx status other than 401, 403
// and 429: the server refused the request as it is.
var ErrBadRequest = errors.New("stt: request refused")

// ErrUnauthorized classifies an APIError for HTTP 401 or 403.
var ErrUnauthorized = errors.New("stt: unauthorized")

// ErrRateLimited classifies an APIError for HTTP 429.
var ErrRateLimited = errors.New("stt: rate limited")

// ErrServer classifies an APIError for a 5xx status.
var ErrServer = errors.New("stt: server error")

// ErrTimeout means the server did not answer within the configured
// Timeout.
var ErrTimeout = errors.New("stt: no response before the timeout")

// ErrMalformed means the server's answer was not the protocol's JSON.
var ErrMalformed = errors.New("stt: malformed response")

// APIError is an error a transcription server reported, with its own message. It
// unwraps to ErrUnauthorized, ErrRateLimited, ErrBadRequest or ErrServer by
// status.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type and Code are the provider's classification when it gives one.
	Type, Code string
	// Message is the provider's explanation, or the status text.
	Message string
}

// Error returns the status and the provider's message.
func (e *APIError) Error() string {
	s := fmt.Sprintf("stt: HTTP %d: %s", e.StatusCode, e.Message)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	return s
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
