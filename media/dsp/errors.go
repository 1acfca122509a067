package dsp

import (
	"errors"
	"fmt"
)

var (
	// ErrSampleRate reports a sample rate the processor does not run at
	// (the APM supports 8000, 16000, 32000 and 48000 Hz).
	ErrSampleRate = errors.New("dsp: unsupported sample rate")

	// ErrConfig reports a Config field outside its range; the wrapping error
	// names the field.
	ErrConfig = errors.New("dsp: invalid config")

	// ErrFrameSize reports a frame whose length is not a positive multiple of
	// 10 ms at the configured rate.
	ErrFrameSize = errors.New("dsp: frame is not a positive multiple of 10 ms")

	// ErrClosed reports use of a Processor after Close.
	ErrClosed = errors.New("dsp: processor closed")
)

// APMError is an error code returned by the WebRTC audio processing module,
// with the operation that produced it.
type APMError struct {
	// Op is what was being done ("create", "enable noise suppression",
	// "process near", ...).
	Op string
	// Code is the webrtc::AudioProcessing::Error value (negative).
	Code int
}

// Error implements error.
func (e *APMError) Error() string {
	return fmt.Sprintf("dsp: %s: webrtc apm error %d (%s)", e.Op, e.Code, apmCodeName(e.Code))
}

// apmCodeName names the webrtc::AudioProcessing::Error values.
func apmCodeName(code int) string {
	switch code {
	case -1:
		return "unspecified"
	case -2:
		return "creation failed"
	case -3:
		return "unsupported component"
	case -4:
		return "unsupported function"
	case -5:
		return "null pointer"
	case -6:
		return "bad parameter"
	case -7:
		return "bad sample rate"
	case -8:
		return "bad data length"
	case -9:
		return "bad number of channels"
	case -10:
		return "file"
	case -11:
		return "stream parameter not set"
	case -12:
		return "not enabled"
	case -13:
		return "bad stream parameter"
	}
	return "unknown"
}
