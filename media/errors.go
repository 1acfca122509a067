package media

import "errors"

var (
	// ErrUnsupportedRate reports a sample rate other than 8000, 16000,
	// 24000 or 48000 Hz.
	ErrUnsupportedRate = errors.New("media: unsupported sample rate")
	// ErrRingCapacity reports a ring buffer capacity that is not positive.
	ErrRingCapacity = errors.New("media: ring capacity must be positive")
)
