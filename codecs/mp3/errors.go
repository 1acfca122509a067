package mp3

import "errors"

// Errors returned by the encoder, wrapped with the offending value.
var (
	// ErrSampleRate reports a sample rate MP3 cannot carry.
	ErrSampleRate = errors.New("mp3: unsupported sample rate")
	// ErrChannels reports a channel count other than 1 or 2.
	ErrChannels = errors.New("mp3: unsupported channel count")
	// ErrBitrate reports a bit rate that is not a Layer III bit rate for the
	// MPEG version the sample rate selects.
	ErrBitrate = errors.New("mp3: unsupported bit rate")
	// ErrPartialFrame reports interleaved stereo input with an odd number of
	// samples.
	ErrPartialFrame = errors.New("mp3: partial stereo frame")
	// ErrFlushed reports use of an encoder after Flush ended its stream.
	ErrFlushed = errors.New("mp3: encoder already flushed")
	// ErrClosed reports use of a closed encoder.
	ErrClosed = errors.New("mp3: encoder closed")
	// ErrLAME reports a failure inside libmp3lame.
	ErrLAME = errors.New("mp3: libmp3lame error")
)
