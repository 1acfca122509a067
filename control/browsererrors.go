package control

import "errors"

// Errors a BrowserMedia implementation wraps so the API can answer with
// the right status.
var (
	// ErrBadOffer means the browser's SDP offer cannot be answered (400).
	ErrBadOffer = errors.New("control: unusable SDP offer")
	// ErrMediaUnavailable means the media side cannot take another call
	// now: at capacity or shutting down (503).
	ErrMediaUnavailable = errors.New("control: browser media unavailable")
)
