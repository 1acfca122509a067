package resample

import "errors"

// ErrUnsupportedRate is returned by New when a rate is not one of 8000, 16000,
// 24000 or 48000 Hz (or, for the input only, 22050 or 44100 Hz). The returned
// error wraps it and names the rate.
var ErrUnsupportedRate = errors.New("resample: unsupported sample rate")

// ErrUnsupportedQuality is returned by New for a Quality value that is not one
// of the declared constants.
var ErrUnsupportedQuality = errors.New("resample: unsupported quality")

// ErrShortBuffer is returned by ProcessTo and Flush when dst cannot hold the
// output for the given input; nothing is consumed in that case. Size dst with
// OutputLen (for ProcessTo) or Delay (for Flush).
var ErrShortBuffer = errors.New("resample: destination buffer too short")

// ErrClosed is returned by every method of a Resampler after Close.
var ErrClosed = errors.New("resample: resampler closed")
