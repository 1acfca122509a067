package coord

import (
	"fmt"
	"time"
)

// Validate reports whether a names a stream, group and consumer. It wraps [ErrInvalid].
func (a ReadArgs) Validate() error {
	switch {
	case a.Stream == "":
		return fmt.Errorf("%w: empty stream", ErrInvalid)
	case a.Group == "":
		return fmt.Errorf("%w: empty group", ErrInvalid)
	case a.Consumer == "":
		return fmt.Errorf("%w: empty consumer", ErrInvalid)
	}
	return nil
}

// Validate reports whether r is a usable limit: N of at least 1 per at least 1 ms (the
// resolution of the Redis implementation). It wraps [ErrInvalid].
func (r Rate) Validate() error {
	if r.N < 1 || r.Per < time.Millisecond {
		return fmt.Errorf("%w: rate %d per %v", ErrInvalid, r.N, r.Per)
	}
	return nil
}

// CheckKey wraps [ErrInvalid] when key (or the node id or stream name that what names)
// is empty, or when ttl is neither 0 nor at least 1 ms (the Redis resolution), or is 0
// while required is set. Implementations share it so they reject the same input.
func CheckKey(what, key string, ttl time.Duration, required bool) error {
	if key == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	}
	if ttl < 0 || (ttl > 0 || required) && ttl < time.Millisecond {
		return fmt.Errorf("%w: %s ttl %v below 1ms", ErrInvalid, what, ttl)
	}
	return nil
}
