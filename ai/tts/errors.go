package tts

import (
	"errors"

	"github.com/voiced/voiced/ai"
)

// ErrUnsupportedRate is returned for a Request.SampleRate other than 8000,
// 16000, 24000 or 48000 Hz.
var ErrUnsupportedRate = errors.New("tts: unsupported sample rate")

// The provider error taxonomy is package ai's; these are its values, under
// the names this package has always used.
var (
	// ErrBadRequest is ai.ErrBadRequest: returned for a Request the
	// provider cannot speak as it is (empty text, negative speed), and
	// classifying an APIError for a 4xx status other than 401, 403 and 429.
	ErrBadRequest = ai.ErrBadRequest
	// ErrUnauthorized is ai.ErrUnauthorized (HTTP 401 or 403).
	ErrUnauthorized = ai.ErrUnauthorized
	// ErrRateLimited is ai.ErrRateLimited (HTTP 429).
	ErrRateLimited = ai.ErrRateLimited
	// ErrServer is ai.ErrUnavailable (5xx).
	ErrServer = ai.ErrUnavailable
	// ErrTimeout is ai.ErrTimeout: no response headers within the
	// configured Timeout.
	ErrTimeout = ai.ErrTimeout
)

// APIError is an error a speech server reported, with its own message
// (ai.APIError, Service "tts").
type APIError = ai.APIError

// ErrClosed is returned by Read after Close.
var ErrClosed = errors.New("tts: audio closed")
