//go:build !linux

package hugepage

import (
	"context"
	"time"
	"unsafe"
)

// Mode is "" where there are no transparent huge pages.
func Mode() string { return "" }

// Keep returns ErrUnsupported: only Linux has transparent huge pages.
func Keep(context.Context, time.Duration, func(error)) (func(), error) { return nil, ErrUnsupported }

// Advised is false where there are no transparent huge pages.
func Advised(unsafe.Pointer) (bool, int, error) { return false, 0, nil }
