package echo

import "errors"

// ErrNoPorts is returned by Listen when count is not positive.
var ErrNoPorts = errors.New("echo: no ports to listen on")
