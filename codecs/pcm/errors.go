package pcm

import (
	"errors"
	"fmt"
)

// ErrOddLength reports a byte slice whose length is odd, so it cannot hold
// whole 16-bit samples.
var ErrOddLength = errors.New("pcm: odd number of bytes for 16-bit samples")

func oddLengthError(n int) error {
	return fmt.Errorf("pcm: %d bytes: %w", n, ErrOddLength)
}
