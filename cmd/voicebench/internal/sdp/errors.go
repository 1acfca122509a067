package sdp

import "errors"

var (
	// ErrNoAudio reports a description without a usable audio m-line
	// (missing, port 0, or no connection address).
	ErrNoAudio = errors.New("sdp: no audio stream")
	// ErrNoCodec reports an answer with no codec we offered.
	ErrNoCodec = errors.New("sdp: no common codec")
)
