package sdp

import "errors"

var (
	// ErrSyntax means the input is not an SDP session description: a
	// required line is missing or a line is malformed. Parse wraps it with
	// the line number.
	ErrSyntax = errors.New("sdp: syntax error")
	// ErrNoAudio means the description has no audio m= line with a usable
	// RTP/AVP (or RTP/SAVP, RTP/AVPF) transport.
	ErrNoAudio = errors.New("sdp: no usable audio stream")
	// ErrNoCodec means no offered audio format is one we support: the SIP
	// side answers 488 Not Acceptable Here.
	ErrNoCodec = errors.New("sdp: no supported codec")
	// ErrNoAddress means the chosen stream has no connection address.
	ErrNoAddress = errors.New("sdp: no connection address")
)
