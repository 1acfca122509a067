package stt

import (
	"errors"

	"github.com/voiced/voiced/ai"
)

// ErrNoAudio is returned for a Request with no samples.
var ErrNoAudio = errors.New("stt: no audio")

// The provider error taxonomy is package ai's; these are its values, under
// the names this package has always used.
var (
	// ErrBadRequest is ai.ErrBadRequest (a 4xx status other than 401, 403
	// and 429).
	ErrBadRequest = ai.ErrBadRequest
	// ErrUnauthorized is ai.ErrUnauthorized (HTTP 401 or 403).
	ErrUnauthorized = ai.ErrUnauthorized
	// ErrRateLimited is ai.ErrRateLimited (HTTP 429).
	ErrRateLimited = ai.ErrRateLimited
	// ErrServer is ai.ErrUnavailable (5xx).
	ErrServer = ai.ErrUnavailable
	// ErrTimeout is ai.ErrTimeout: no answer within the configured
	// Timeout.
	ErrTimeout = ai.ErrTimeout
	// ErrMalformed is ai.ErrMalformed: the answer was not the protocol's
	// JSON.
	ErrMalformed = ai.ErrMalformed
)

// APIError is an error a transcription server reported, with its own
// message (ai.APIError, Service "stt").
type APIError = ai.APIError
