package agent

import "errors"

var (
	// ErrConfig reports an invalid Config field; the wrapping error names
	// it.
	ErrConfig = errors.New("agent: invalid config")
	// ErrNoProvider reports a missing LLM, STT or TTS for a session that
	// needs it.
	ErrNoProvider = errors.New("agent: provider missing")
	// ErrFrameSize reports a caller frame that is not 20 ms at the input
	// rate.
	ErrFrameSize = errors.New("agent: caller frame must be 20 ms at the input rate (320 samples at 16 kHz, 160 at 8 kHz)")
	// ErrClosed reports use of a closed session.
	ErrClosed = errors.New("agent: session closed")
	// ErrRecordersClosed reports a recording started on closed Recorders.
	ErrRecordersClosed = errors.New("agent: recorders closed")
)
