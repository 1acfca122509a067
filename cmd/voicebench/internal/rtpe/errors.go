package rtpe

import "errors"

// ErrNotInstalled is returned by Start when the rtpengine binary is not
// found.
var ErrNotInstalled = errors.New("rtpe: rtpengine not installed (apt-get install rtpengine-daemon)")
