package opus

import (
	"errors"
	"fmt"

	hopus "github.com/hraban/opus"
)

// ErrUnsupportedRate is returned for a sample rate the encoder or decoder
// does not take; the returned error wraps it and names the rate.
var ErrUnsupportedRate = errors.New("opus: unsupported sample rate")

// ErrUnsupportedChannels is returned for a channel count other than the
// supported ones; the returned error names the count.
var ErrUnsupportedChannels = errors.New("opus: unsupported channel count")

// ErrBadConfig is returned by NewEncoder and the encoder setters for a
// bitrate, complexity or loss percentage out of range; the error names it.
var ErrBadConfig = errors.New("opus: bad encoder setting")

// ErrFrameSize is returned when a PCM frame is not 2.5, 5, 10, 20, 40 or
// 60 ms at the codec's rate, or a concealment length is not a whole number of
// 2.5 ms; the error names the length and what was expected.
var ErrFrameSize = errors.New("opus: bad frame size")

// ErrShortBuffer is returned when dst cannot hold the result; the error
// names both sizes. Nothing is decoded or encoded in that case.
var ErrShortBuffer = errors.New("opus: destination buffer too short")

// ErrEmptyPacket is returned by DecodeTo and DecodeFECTo for a zero-length
// packet. A missing packet is concealed with ConcealTo instead.
var ErrEmptyPacket = errors.New("opus: empty packet")

// ErrInvalidPacket is returned for a packet whose framing breaks RFC 6716
// section 3 (or that libopus rejects); the error names the broken rule.
var ErrInvalidPacket = errors.New("opus: invalid packet")

// ErrCodec wraps any other failure reported by libopus.
var ErrCodec = errors.New("opus: libopus error")

// libError translates an error from libopus (through hraban/opus) for op.
func libError(op string, err error) error {
	var code hopus.Error
	if errors.As(err, &code) {
		switch code {
		case hopus.ErrInvalidPacket:
			return fmt.Errorf("%s: %w: libopus: %v", op, ErrInvalidPacket, err)
		case hopus.ErrBufferTooSmall:
			return fmt.Errorf("%s: %w: libopus: %v", op, ErrShortBuffer, err)
		}
	}
	return fmt.Errorf("%s: %w: %v", op, ErrCodec, err)
}
