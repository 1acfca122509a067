package amd

import "errors"

var (
	// ErrConfig reports a Config field outside its range; the wrapping
	// error names the field.
	ErrConfig = errors.New("amd: invalid config")
	// ErrFrameSize reports a frame that is not 20 ms at the configured
	// rate.
	ErrFrameSize = errors.New("amd: frame is not 20 ms")
)
