package coord

import "errors"

// ErrNoNodes is returned by [Placer.Pick] when no live, non-draining node exists.
var ErrNoNodes = errors.New("coord: no live node accepts new calls")

// ErrUnknownNode is returned by [Commander.Send] when the addressed node is not live
// (never heard of, expired or left).
var ErrUnknownNode = errors.New("coord: unknown or dead node")

// ErrLocked is returned by [Locker.Lock] when another holder has the lock.
var ErrLocked = errors.New("coord: locked")

// ErrFull is returned by [Semaphore.Acquire] when every slot is leased.
var ErrFull = errors.New("coord: all slots taken")

// ErrNotHeld is returned when releasing or extending a lock or lease whose token is not
// the current holder's, typically because it expired and may have been taken by another.
var ErrNotHeld = errors.New("coord: not held")

// ErrInvalid is returned, wrapped with details, for an empty id or key, a non-positive
// limit or a missing TTL where one is required.
var ErrInvalid = errors.New("coord: invalid argument")

// ErrClosed is returned by a [Local] after Close.
var ErrClosed = errors.New("coord: closed")
