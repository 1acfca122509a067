package tts

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/voiced/voiced/ai/internal/apierr"
)

// ErrUnsupportedRate is returned for a Request.SampleRate other than 8000,
// 16000, 24000 or 48000 Hz.
var ErrUnsupportedRate = errors.New("tts: unsupported sample rate")

// ErrBadRequest is returned for a Request the provider cannot speak as it
// is (empty text, negative speed), and classifies an APIError for a 4xx
// status other than 401, 403 and 429.
var ErrBadRequest = errors.New("tts: request refused")

// ErrUnauthorized classifies an APIError for HTTP 401 or 403.
var ErrUnauthorized = errors.New("tts: unauthorized")

// ErrRateLimited classifies an APIError for HTTP 429.
var ErrRateLimited = errors.New("tts: rate limited")

// ErrServer classifies an APIError for a 5xx status.
var ErrServer = errors.New("tts: server error")

// ErrTimeout means the server sent no response headers within the
// configured Timeout.
var ErrTimeout = errors.New("tts: no response before the timeout")

// ErrClosed is returned by Read after Close.
var ErrClosed = errors.New("tts: audio closed")

// APIError is an error a speech server reported, with its own message. It
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
	s := fmt.Sprintf("tts: HTTP %d: %s", e.StatusCode, e.Message)
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
