package sipua

import "errors"

// ErrConfig reports an unusable Config.
var ErrConfig = errors.New("sipua: bad config")
