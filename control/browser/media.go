package browser

import (
	"context"
	"errors"
	"time"

	"github.com/voiced/voiced/control/calllog"
)

// Errors a Media implementation wraps so the API can answer with the
// right status.
var (
	// ErrBadOffer means the browser's SDP offer cannot be answered (400).
	ErrBadOffer = errors.New("control: unusable SDP offer")
	// ErrMediaUnavailable means the media side cannot take another call
	// now: at capacity or shutting down (503).
	ErrMediaUnavailable = errors.New("control: browser media unavailable")
)

// Media is the WebRTC side that browser calls (the widget and mic
// sessions) are handed to once admitted: call.Browser (media/webrtc), wired
// by cmd/voiced. It owns each call from the answer on and reports its end
// through the call log (Finish, or Fail when the media never connected).
type Media[C any] interface {
	// Check reports whether a new browser call could start now; an error
	// wrapping ErrMediaUnavailable when not (no capacity, shutting down).
	Check(ctx context.Context) error
	// Answer starts the media of admitted call c for the browser's SDP
	// offer and returns the SDP answer, complete with ICE candidates. An
	// unusable offer gives an error wrapping ErrBadOffer.
	Answer(ctx context.Context, c Call[C], offer string) (string, error)
}

// Call is an admitted browser call as the media side needs it.
// Admission.Agent already carries any per-call overrides (the widget
// webhook's prompt, first message, voice and variables).
type Call[C any] struct {
	calllog.Admission[C]
	// Direction is web (the widget) or test (a mic session).
	Direction string
	// Origin is the page's origin for widget calls.
	Origin string
	// Metadata is what the widget webhook asked to keep with the call.
	Metadata map[string]any
}

// ICE is implemented by a Media whose node has STUN or TURN servers for
// browsers: the iceServers a browser's RTCPeerConnection should use, with
// credentials tied to id (time-limited TURN REST credentials, or static
// ones), and when they expire (zero if never).
type ICE interface {
	ICEServers(id string) ([]ICEServer, time.Time)
}

// ICEServer is an RTCIceServer as browsers take it.
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}
