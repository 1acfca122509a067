package coordtest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/coord"
)

// shortTTL is the ttl of counters, leases and locks in the expiry tests.
const shortTTL = 500 * time.Millisecond

var counterTests = []test{
	{"incr_adds_deltas", testCounterIncr},
	{"concurrent_incr_counts_each", testCounterConcurrent},
	{"ttl_restarts_counter", testCounterTTL},
}

var limitTests = []test{
	{"exactly_n_of_concurrent_allowed", testLimitConcurrent},
	{"remaining_counts_down", testLimitRemaining},
	{"window_slides", testLimitSlides},
	{"keys_independent", testLimitKeys},
	{"rejects_invalid_rate", testLimitInvalid},
}

var semaphoreTests = []test{
	{"exactly_size_of_concurrent_acquire", testSemaphoreConcurrent},
	{"lease_expires", testSemaphoreExpires},
	{"extend_keeps_lease", testSemaphoreExtend},
}

var lockTests = []test{
	{"one_winner_among_concurrent", testLockOneWinner},
	{"unlock_needs_holder_token", testLockToken},
	{"expires_and_old_holder_cannot_release", testLockExpires},
	{"extend_keeps_lock", testLockExtend},
	{"rejects_missing_ttl", testLockInvalid},
}

// concurrently runs f n times at once and returns how many returned nil; every
// non-nil error must match want.
func concurrently(t *testing.T, n int, want error, f func() error) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		ok    int
		start = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			err := f()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, want):
				t.Errorf("got %v, want nil or %v", err, want)
			}
		})
	}
	close(start)
	wg.Wait()
	return ok
}

func testCounterIncr(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	key := coord.OrgKey("org1", "calls")
	for _, step := range []struct{ delta, want int64 }{{1, 1}, {2, 3}, {-1, 2}, {0, 2}} {
		v, err := c.Incr(t.Context(), key, step.delta, 0)
		require.NoError(t, err)
		require.Equal(t, step.want, v)
	}
	v, err := c.Incr(t.Context(), coord.OrgKey("org2", "calls"), 1, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), v, "other org's key is separate")
	_, err = c.Incr(t.Context(), "", 1, 0)
	require.ErrorIs(t, err, coord.ErrInvalid)
}

func testCounterConcurrent(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	const n = 50
	var (
		mu   sync.Mutex
		seen = map[int64]bool{}
	)
	require.Equal(t, n, concurrently(t, n, nil, func() error {
		v, err := c.Incr(t.Context(), "k", 1, time.Minute)
		mu.Lock()
		seen[v] = true
		mu.Unlock()
		return err
	}))
	require.Len(t, seen, n, "each increment saw a distinct value")
	for i := int64(1); i <= n; i++ {
		require.True(t, seen[i], "value %d missing", i)
	}
}

func testCounterTTL(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, stable())
		ctx := t.Context()
		start := time.Now()
		v1, err := c.Incr(ctx, "k", 1, shortTTL)
		require.NoError(t, err)
		v2, err := c.Incr(ctx, "k", 1, shortTTL)
		require.NoError(t, err)
		if time.Since(start) >= shortTTL {
			return false
		}
		require.Equal(t, int64(1), v1)
		require.Equal(t, int64(2), v2, "later ttl does not reset the value")
		time.Sleep(time.Until(start.Add(shortTTL + shortTTL/2)))
		v, err := c.Incr(ctx, "k", 1, shortTTL)
		require.NoError(t, err)
		require.Equal(t, int64(1), v, "counter restarted after ttl")
		return true
	})
}

func testLimitConcurrent(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	rate := coord.Rate{N: 5, Per: 10 * time.Second}
	errDenied := errors.New("denied")
	allowed := concurrently(t, 40, errDenied, func() error {
		d, err := c.Allow(t.Context(), "invite:user1", rate)
		if err != nil {
			return err
		}
		if !d.Allowed {
			if d.RetryAfter <= 0 || d.RetryAfter > rate.Per {
				t.Errorf("RetryAfter %v outside (0, %v]", d.RetryAfter, rate.Per)
			}
			return errDenied
		}
		return nil
	})
	require.Equal(t, rate.N, allowed)
}

func testLimitRemaining(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	rate := coord.Rate{N: 3, Per: time.Hour}
	for _, want := range []int{2, 1, 0} {
		d, err := c.Allow(t.Context(), "k", rate)
		require.NoError(t, err)
		require.Equal(t, coord.Decision{Allowed: true, Remaining: want}, d)
	}
	d, err := c.Allow(t.Context(), "k", rate)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Zero(t, d.Remaining)
	require.InDelta(t, time.Hour, d.RetryAfter, float64(5*time.Second))
}

// testLimitSlides checks the window is sliding: actions leave it one by one, each
// Per after it was allowed, rather than all at a fixed boundary.
func testLimitSlides(t *testing.T, newCoord NewFunc) {
	const per = time.Second
	rate := coord.Rate{N: 2, Per: per}
	retryTiming(t, func() bool {
		c := newCoord(t, stable())
		allow := func() coord.Decision {
			d, err := c.Allow(t.Context(), "k", rate)
			require.NoError(t, err)
			return d
		}
		require.True(t, allow().Allowed)
		first := time.Now() // the first action was counted before this
		time.Sleep(per / 2)
		second := time.Now() // and the second after this
		require.True(t, allow().Allowed)
		d := allow()
		if time.Since(first) >= per {
			return false
		}
		require.False(t, d.Allowed)
		// The window frees up when the first action leaves it, about per/2 from now;
		// a limiter counting from the latest action would say about per.
		require.LessOrEqual(t, d.RetryAfter, per*3/4)

		time.Sleep(time.Until(first.Add(per + 20*time.Millisecond)))
		d4, d5 := allow(), allow()
		if time.Since(second) >= per {
			return false
		}
		require.True(t, d4.Allowed, "first action left the window")
		require.False(t, d5.Allowed, "second action is still in it")
		return true
	})
}

func testLimitKeys(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	rate := coord.Rate{N: 1, Per: time.Minute}
	for _, key := range []string{"a", "b", coord.OrgKey("o", "a")} {
		d, err := c.Allow(t.Context(), key, rate)
		require.NoError(t, err)
		require.True(t, d.Allowed, key)
	}
	d, err := c.Allow(t.Context(), "a", rate)
	require.NoError(t, err)
	require.False(t, d.Allowed)
}

func testLimitInvalid(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	for _, r := range []coord.Rate{{N: 0, Per: time.Second}, {N: 1}, {N: 1, Per: time.Microsecond}} {
		_, err := c.Allow(t.Context(), "k", r)
		require.ErrorIs(t, err, coord.ErrInvalid)
	}
	_, err := c.Allow(t.Context(), "", coord.Rate{N: 1, Per: time.Second})
	require.ErrorIs(t, err, coord.ErrInvalid)
}

func testSemaphoreConcurrent(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	key := coord.OrgKey("org1", "simulations")
	var (
		mu     sync.Mutex
		tokens []string
	)
	require.Equal(t, 3, concurrently(t, 20, coord.ErrFull, func() error {
		tok, err := c.Acquire(ctx, key, 3, time.Minute)
		if err == nil {
			mu.Lock()
			tokens = append(tokens, tok)
			mu.Unlock()
		}
		return err
	}))
	require.NoError(t, c.Release(ctx, key, tokens[1]))
	require.ErrorIs(t, c.Release(ctx, key, tokens[1]), coord.ErrNotHeld, "released twice")
	_, err := c.Acquire(ctx, key, 3, time.Minute)
	require.NoError(t, err, "released slot reusable")
	_, err = c.Acquire(ctx, key, 3, time.Minute)
	require.ErrorIs(t, err, coord.ErrFull)

	_, err = c.Acquire(ctx, key, 0, time.Minute)
	require.ErrorIs(t, err, coord.ErrInvalid)
	_, err = c.Acquire(ctx, key, 1, 0)
	require.ErrorIs(t, err, coord.ErrInvalid)
}

func testSemaphoreExpires(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, stable())
		ctx := t.Context()
		start := time.Now()
		old, err := c.Acquire(ctx, "k", 1, shortTTL)
		require.NoError(t, err)
		_, err = c.Acquire(ctx, "k", 1, shortTTL)
		if time.Since(start) >= shortTTL {
			return false
		}
		require.ErrorIs(t, err, coord.ErrFull)
		time.Sleep(time.Until(start.Add(shortTTL + shortTTL/2)))
		tok, err := c.Acquire(ctx, "k", 1, time.Minute)
		require.NoError(t, err, "expired lease freed its slot")
		require.ErrorIs(t, c.Release(ctx, "k", old), coord.ErrNotHeld)
		require.ErrorIs(t, c.ExtendLease(ctx, "k", old, time.Minute), coord.ErrNotHeld)
		require.NoError(t, c.Release(ctx, "k", tok))
		return true
	})
}

func testSemaphoreExtend(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, stable())
		ctx := t.Context()
		start := time.Now()
		tok, err := c.Acquire(ctx, "k", 1, shortTTL)
		require.NoError(t, err)
		err = c.ExtendLease(ctx, "k", tok, 10*shortTTL)
		if time.Since(start) >= shortTTL {
			return false
		}
		require.NoError(t, err)
		time.Sleep(time.Until(start.Add(shortTTL + shortTTL/2))) // past the original expiry
		_, err = c.Acquire(ctx, "k", 1, time.Second)
		require.ErrorIs(t, err, coord.ErrFull, "extended lease still holds the slot")
		require.NoError(t, c.Release(ctx, "k", tok))
		return true
	})
}

func testLockOneWinner(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	require.Equal(t, 1, concurrently(t, 20, coord.ErrLocked, func() error {
		_, err := c.Lock(t.Context(), "job:rollup", time.Minute)
		return err
	}))
}

func testLockToken(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	tok, err := c.Lock(ctx, "k", time.Minute)
	require.NoError(t, err)
	require.NotEmpty(t, tok)
	require.ErrorIs(t, c.Unlock(ctx, "k", "not-the-token"), coord.ErrNotHeld)
	_, err = c.Lock(ctx, "k", time.Minute)
	require.ErrorIs(t, err, coord.ErrLocked, "a wrong token released nothing")
	require.NoError(t, c.Unlock(ctx, "k", tok))
	require.ErrorIs(t, c.Unlock(ctx, "k", tok), coord.ErrNotHeld)
	tok2, err := c.Lock(ctx, "k", time.Minute)
	require.NoError(t, err)
	require.NotEqual(t, tok, tok2)
	_, err = c.Lock(ctx, "other", time.Minute)
	require.NoError(t, err, "keys are independent")
}

func testLockExpires(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	ctx := t.Context()
	old, err := c.Lock(ctx, "k", shortTTL)
	require.NoError(t, err)
	time.Sleep(shortTTL + shortTTL/2)
	tok, err := c.Lock(ctx, "k", time.Minute)
	require.NoError(t, err, "expired lock is free")
	require.ErrorIs(t, c.Unlock(ctx, "k", old), coord.ErrNotHeld)
	require.ErrorIs(t, c.ExtendLock(ctx, "k", old, time.Minute), coord.ErrNotHeld)
	_, err = c.Lock(ctx, "k", time.Minute)
	require.ErrorIs(t, err, coord.ErrLocked, "old holder released the new holder's lock")
	require.NoError(t, c.Unlock(ctx, "k", tok))
}

func testLockExtend(t *testing.T, newCoord NewFunc) {
	retryTiming(t, func() bool {
		c := newCoord(t, stable())
		ctx := t.Context()
		start := time.Now()
		tok, err := c.Lock(ctx, "k", shortTTL)
		require.NoError(t, err)
		err = c.ExtendLock(ctx, "k", tok, 10*shortTTL)
		if time.Since(start) >= shortTTL {
			return false
		}
		require.NoError(t, err)
		time.Sleep(time.Until(start.Add(shortTTL + shortTTL/2))) // past the original expiry
		_, err = c.Lock(ctx, "k", time.Second)
		require.ErrorIs(t, err, coord.ErrLocked, "extended lock still held")
		require.NoError(t, c.Unlock(ctx, "k", tok))
		return true
	})
}

func testLockInvalid(t *testing.T, newCoord NewFunc) {
	c := newCoord(t, stable())
	_, err := c.Lock(t.Context(), "k", 0)
	require.ErrorIs(t, err, coord.ErrInvalid)
	_, err = c.Lock(t.Context(), "", time.Second)
	require.ErrorIs(t, err, coord.ErrInvalid)
}
