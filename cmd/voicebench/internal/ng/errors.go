package ng

import (
	"errors"
	"fmt"
)

var (
	// ErrSyntax reports malformed bencode; the wrapping error names the
	// offset and what was expected.
	ErrSyntax = errors.New("ng: bencode syntax error")
	// ErrType reports a Go value Append cannot encode.
	ErrType = errors.New("ng: cannot encode type")
	// ErrClosed is returned by Do after Close.
	ErrClosed = errors.New("ng: client closed")
	// ErrTimeout is returned when no reply came after every resend.
	ErrTimeout = errors.New("ng: no reply")
	// ErrReply reports a reply without a "result" key.
	ErrReply = errors.New("ng: reply without result")
)

// Error is a command rtpengine refused: its reply had result "error".
type Error struct {
	Command string
	Reason  string // the reply's "error-reason"
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("ng: %s refused: %s", e.Command, e.Reason)
}
