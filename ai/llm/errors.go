package llm

import (
	"errors"

	"github.com/voiced/voiced/ai"
)

// ErrNoMessages is returned by Stream for a Request with no messages.
var ErrNoMessages = errors.New("llm: request has no messages")

// The provider error taxonomy is package ai's; these are its values, under
// the names this package has always used.
var (
	// ErrUnauthorized is ai.ErrUnauthorized (HTTP 401 or 403).
	ErrUnauthorized = ai.ErrUnauthorized
	// ErrRateLimited is ai.ErrRateLimited (HTTP 429).
	ErrRateLimited = ai.ErrRateLimited
	// ErrBadRequest is ai.ErrBadRequest (the other 4xx statuses).
	ErrBadRequest = ai.ErrBadRequest
	// ErrServer is ai.ErrUnavailable (5xx, or an error event mid-stream).
	ErrServer = ai.ErrUnavailable
	// ErrTimeout is ai.ErrTimeout: no response headers within the
	// configured Timeout.
	ErrTimeout = ai.ErrTimeout
	// ErrMalformed is ai.ErrMalformed: an event that is not JSON, or a line
	// larger than openai-go's limit (32 MiB).
	ErrMalformed = ai.ErrMalformed
)

// APIError is an error the provider reported, with its own message
// (ai.APIError, Service "llm").
type APIError = ai.APIError

// ErrTruncated means the stream ended before the server said it was done
// (no finish reason): the connection was cut.
var ErrTruncated = errors.New("llm: stream ended before the answer finished")

// ErrClosed is returned by Recv after Close.
var ErrClosed = errors.New("llm: stream closed")
