package jitter

import "errors"

var (
	// ErrBadConfig reports a Config value out of range; the error names it.
	ErrBadConfig = errors.New("jitter: bad config")
	// ErrShortBuffer is returned by Playout.ReadFrame when dst is shorter
	// than one frame.
	ErrShortBuffer = errors.New("jitter: destination shorter than a frame")
)
