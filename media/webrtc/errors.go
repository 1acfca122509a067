package webrtc

import "errors"

// Errors of the package.
var (
	// ErrBadConfig reports a Config value out of range; the error names it.
	ErrBadConfig = errors.New("webrtc: bad config")
	// ErrBadOffer means the browser's SDP offer could not be used: it is
	// not an offer, it does not parse, or it offers no Opus audio.
	ErrBadOffer = errors.New("webrtc: unusable SDP offer")
	// ErrCapacity means the node already runs MaxSessions sessions.
	ErrCapacity = errors.New("webrtc: no capacity for another session")
	// ErrClosed is returned by calls on a closed Session or Server.
	ErrClosed = errors.New("webrtc: closed")
	// ErrGatherTimeout means ICE candidate gathering did not complete in
	// time, so no complete answer could be made.
	ErrGatherTimeout = errors.New("webrtc: ICE gathering did not complete")
	// ErrFrameSize means a frame is not 20 ms at the session's rate.
	ErrFrameSize = errors.New("webrtc: frame is not 20 ms at the session rate")
)
