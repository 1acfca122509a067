package rtp

import "errors"

var (
	// ErrClosed is returned by a Session's methods after Close.
	ErrClosed = errors.New("rtp: session closed")
	// ErrMediaTimeout is the reason a Session reports through Done and Err
	// when no RTP came from the peer for Config.MediaTimeout.
	ErrMediaTimeout = errors.New("rtp: media timeout: no RTP from the peer")
	// ErrNoPorts is returned by NewSession when every port of the range is
	// taken.
	ErrNoPorts = errors.New("rtp: no free port in the RTP port range")
	// ErrBadConfig reports a Config or Ports value out of range; the error
	// names it.
	ErrBadConfig = errors.New("rtp: bad config")
	// ErrUnsupportedCodec is returned by Update for an audio codec other
	// than PCMU, PCMA or Opus, or a clock rate they do not use.
	ErrUnsupportedCodec = errors.New("rtp: unsupported codec")
	// ErrFrameSize is returned by ReadFrame and WriteFrame for a buffer that
	// is not one 20 ms frame at 16 kHz (320 samples), and by SetSource for
	// an unsupported rate.
	ErrFrameSize = errors.New("rtp: frame is not 20 ms at the engine rate")
	// ErrQueueFull is returned by WriteFrame when the send queue holds
	// Config.QueueFrames frames already.
	ErrQueueFull = errors.New("rtp: send queue full")
	// ErrSourceSet is returned by WriteFrame while a Source feeds the
	// session: the two ways of sending audio exclude each other.
	ErrSourceSet = errors.New("rtp: session has a source; WriteFrame is off")
	// ErrSinkSet is returned by ReadFrame while a Sink takes the
	// session's audio: the two ways of receiving exclude each other.
	ErrSinkSet = errors.New("rtp: session has a sink; ReadFrame is off")
	// ErrNoDTMF is returned by SendDTMF when the peer negotiated no
	// telephone-event payload type.
	ErrNoDTMF = errors.New("rtp: peer has no telephone-event")
	// ErrBadDigit is returned by SendDTMF for a character that is not a
	// DTMF digit (0-9, *, #, A-D).
	ErrBadDigit = errors.New("rtp: not a DTMF digit")
)
