package udp

import "errors"

// ErrNotIPv4 is returned for an address that is not IPv4.
var ErrNotIPv4 = errors.New("udp: IPv4 address required")
