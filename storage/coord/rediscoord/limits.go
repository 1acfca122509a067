package rediscoord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/storage/coord"
)

// Incr implements [coord.Counter].
func (c *Coord) Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	if err := coord.CheckKey("counter key", key, ttl, false); err != nil {
		return 0, err
	}
	var ttlMS int64
	if ttl > 0 {
		ttlMS = ms(ttl)
	}
	v, err := incrScript.Run(ctx, c.rdb, []string{c.key("ctr:", key)}, delta, ttlMS).Int64()
	if err != nil {
		return 0, fmt.Errorf("incr %s: %w", key, err)
	}
	return v, nil
}

// Allow implements [coord.Limiter] with a sliding-window log in a sorted set scored by
// the server time in milliseconds.
func (c *Coord) Allow(ctx context.Context, key string, r coord.Rate) (coord.Decision, error) {
	if err := coord.CheckKey("limit key", key, 0, false); err != nil {
		return coord.Decision{}, err
	}
	if err := r.Validate(); err != nil {
		return coord.Decision{}, err
	}
	res, err := allowScript.Run(ctx, c.rdb, []string{c.key("lim:", key)}, r.N, ms(r.Per), coord.NewToken()).Int64Slice()
	if err != nil {
		return coord.Decision{}, fmt.Errorf("allow %s: %w", key, err)
	}
	if len(res) != 3 {
		return coord.Decision{}, fmt.Errorf("allow %s: unexpected reply %v", key, res)
	}
	return coord.Decision{
		Allowed:    res[0] == 1,
		Remaining:  int(res[1]),
		RetryAfter: time.Duration(res[2]) * time.Millisecond,
	}, nil
}

// Acquire implements [coord.Semaphore]. Leases live in a sorted set scored by expiry.
func (c *Coord) Acquire(ctx context.Context, key string, size int, ttl time.Duration) (string, error) {
	if err := coord.CheckKey("semaphore key", key, ttl, true); err != nil {
		return "", err
	}
	if size < 1 {
		return "", fmt.Errorf("%w: semaphore size %d", coord.ErrInvalid, size)
	}
	token := coord.NewToken()
	ok, err := acquireScript.Run(ctx, c.rdb, []string{c.key("sem:", key)}, size, ms(ttl), token).Int()
	if err != nil {
		return "", fmt.Errorf("acquire %s: %w", key, err)
	}
	if ok == 0 {
		return "", coord.ErrFull
	}
	return token, nil
}

// Release implements [coord.Semaphore].
func (c *Coord) Release(ctx context.Context, key, token string) error {
	return c.held(releaseScript.Run(ctx, c.rdb, []string{c.key("sem:", key)}, token), "release", key)
}

// ExtendLease implements [coord.Semaphore].
func (c *Coord) ExtendLease(ctx context.Context, key, token string, ttl time.Duration) error {
	if err := coord.CheckKey("semaphore key", key, ttl, true); err != nil {
		return err
	}
	return c.held(extendLeaseScript.Run(ctx, c.rdb, []string{c.key("sem:", key)}, token, ms(ttl)), "extend lease", key)
}

// Lock implements [coord.Locker] with SET NX PX; the token makes release safe.
func (c *Coord) Lock(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := coord.CheckKey("lock key", key, ttl, true); err != nil {
		return "", err
	}
	token := coord.NewToken()
	err := c.rdb.SetArgs(ctx, c.key("lock:", key), token, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return "", coord.ErrLocked
	}
	if err != nil {
		return "", fmt.Errorf("lock %s: %w", key, err)
	}
	return token, nil
}

// Unlock implements [coord.Locker]: compare-and-delete in one script, so a holder whose
// lock expired cannot delete the next holder's.
func (c *Coord) Unlock(ctx context.Context, key, token string) error {
	return c.held(unlockScript.Run(ctx, c.rdb, []string{c.key("lock:", key)}, token), "unlock", key)
}

// ExtendLock implements [coord.Locker].
func (c *Coord) ExtendLock(ctx context.Context, key, token string, ttl time.Duration) error {
	if err := coord.CheckKey("lock key", key, ttl, true); err != nil {
		return err
	}
	return c.held(extendLockScript.Run(ctx, c.rdb, []string{c.key("lock:", key)}, token, ms(ttl)), "extend lock", key)
}

// held turns the 1/0 reply of a compare-and-act script into nil or ErrNotHeld.
func (c *Coord) held(cmd *redis.Cmd, op, key string) error {
	n, err := cmd.Int()
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	if n == 0 {
		return coord.ErrNotHeld
	}
	return nil
}
