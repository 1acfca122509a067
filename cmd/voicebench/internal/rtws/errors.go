package rtws

import "errors"

var (
	// ErrConfig reports an unusable Config.
	ErrConfig = errors.New("rtws: bad config")
	// ErrRefused reports an error event or a closed socket during setup.
	ErrRefused = errors.New("rtws: session refused")
)
