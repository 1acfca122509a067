package audio

import "errors"

var (
	// ErrRate reports a sample rate the source cannot be prepared from or to.
	ErrRate = errors.New("audio: unsupported sample rate")
	// ErrSilent reports a prompt with no sample above Threshold.
	ErrSilent = errors.New("audio: prompt has no speech above the onset threshold")
	// ErrCodec reports a codec name other than PCMU, PCMA or opus.
	ErrCodec = errors.New("audio: unsupported codec")
)
