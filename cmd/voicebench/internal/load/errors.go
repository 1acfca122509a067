package load

import "errors"

var (
	// ErrConfig reports an unusable Config; the error names the field.
	ErrConfig = errors.New("load: bad config")
	// ErrStopped is returned by Scale and Measure after Stop.
	ErrStopped = errors.New("load: generator stopped")
	// ErrRemoteHangup is a call's error when the target ended it early.
	ErrRemoteHangup = errors.New("load: target ended the call")
)
