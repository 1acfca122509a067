package pace

import "errors"

var (
	// ErrClosed is returned by Register after Close.
	ErrClosed = errors.New("pace: pacer closed")
	// ErrBadConfig reports a negative or inconsistent Config value; the
	// returned error names the field.
	ErrBadConfig = errors.New("pace: bad config")
)
