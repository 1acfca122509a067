package procstat

import "errors"

// ErrFormat reports a /proc file that does not parse.
var ErrFormat = errors.New("procstat: unexpected /proc format")
