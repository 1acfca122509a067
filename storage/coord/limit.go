package coord

import (
	"context"
	"time"
)

// Counter is a shared integer counter per key.
type Counter interface {
	// Incr adds delta (which may be negative or zero) to key and returns the new value.
	// A missing key starts at 0. A positive ttl is set when the key has no expiry yet,
	// typically at its first increment, so the counter restarts from 0 ttl later (a
	// fixed window); zero leaves the key without expiry.
	Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error)
}

// Rate is "at most N per Per", e.g. Rate{N: 3, Per: time.Hour}.
type Rate struct {
	N   int
	Per time.Duration
}

// Decision is the outcome of [Limiter.Allow].
type Decision struct {
	// Allowed reports whether the action may proceed; it was counted if so.
	Allowed bool
	// Remaining is how many more actions the window allows after this one.
	Remaining int
	// RetryAfter, when not allowed, is how long until the next action is allowed
	// (the value for an HTTP Retry-After header).
	RetryAfter time.Duration
}

// Limiter enforces rate limits such as "3 invite access requests per hour per user".
//
// The algorithm is a sliding-window log: an action is allowed when fewer than r.N
// actions were allowed in the last r.Per, measured at millisecond resolution. Unlike a
// fixed window it never lets 2N through around a window boundary, and it stores one
// entry per allowed action, which suits the per-user and per-org limits it is for (N up
// to a few thousand per key).
type Limiter interface {
	// Allow counts one action against key if r allows it.
	Allow(ctx context.Context, key string, r Rate) (Decision, error)
}

// Semaphore bounds how many holders run at once per key, e.g. simulations per org.
// Slots are leases that expire, so a holder that dies frees its slot after ttl; long
// holders call ExtendLease before ttl runs out.
type Semaphore interface {
	// Acquire takes one of the size slots of key for ttl and returns the lease token,
	// or [ErrFull]. Callers pass the same size for a key every time.
	Acquire(ctx context.Context, key string, size int, ttl time.Duration) (token string, err error)
	// Release frees the slot held by token, or returns [ErrNotHeld].
	Release(ctx context.Context, key, token string) error
	// ExtendLease sets the lease of token to expire ttl from now, or returns
	// [ErrNotHeld] if it already expired.
	ExtendLease(ctx context.Context, key, token string, ttl time.Duration) error
}

// Locker provides short mutual-exclusion locks across replicas. A lock expires after its
// ttl, so it guards work that is shorter than ttl, or that extends it; it is not a
// fencing mechanism for unbounded work.
type Locker interface {
	// Lock takes key for ttl and returns the holder's token, or [ErrLocked].
	Lock(ctx context.Context, key string, ttl time.Duration) (token string, err error)
	// Unlock releases key if token still holds it, or returns [ErrNotHeld]; it never
	// releases a lock another holder took after token's expired.
	Unlock(ctx context.Context, key, token string) error
	// ExtendLock sets the lock held by token to expire ttl from now, or returns
	// [ErrNotHeld].
	ExtendLock(ctx context.Context, key, token string, ttl time.Duration) error
}
