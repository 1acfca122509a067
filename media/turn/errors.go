package turn

import "errors"

// ErrConfig reports a Config field out of range; the wrapping error names
// the field.
var ErrConfig = errors.New("turn: invalid config")
