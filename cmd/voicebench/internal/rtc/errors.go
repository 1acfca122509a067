package rtc

import "errors"

var (
	// ErrConfig reports an unusable Config.
	ErrConfig = errors.New("rtc: bad config")
	// ErrSignal reports a refused or malformed signalling exchange.
	ErrSignal = errors.New("rtc: signalling failed")
)
