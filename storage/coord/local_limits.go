package coord

import (
	"context"
	"fmt"
	"time"
)

type localCounter struct {
	v   int64
	exp time.Time // zero: never
}

func (c localCounter) expired(now time.Time) bool {
	return !c.exp.IsZero() && !now.Before(c.exp)
}

// localLog is the sliding-window log of one rate-limited key.
type localLog struct {
	per time.Duration
	at  []time.Time // allowed actions, oldest first
}

// trim drops the actions that left the window ending at now.
func (lg *localLog) trim(now time.Time) {
	i := 0
	for i < len(lg.at) && !lg.at[i].After(now.Add(-lg.per)) {
		i++
	}
	lg.at = lg.at[i:]
}

type localLock struct {
	token string
	exp   time.Time
}

// Incr implements [Counter].
func (l *Local) Incr(_ context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	if err := CheckKey("counter key", key, ttl, false); err != nil {
		return 0, err
	}
	now, err := l.begin()
	if err != nil {
		return 0, err
	}
	defer l.mu.Unlock()
	c := l.counters[key]
	if c.expired(now) {
		c = localCounter{}
	}
	c.v += delta
	if c.exp.IsZero() && ttl > 0 {
		c.exp = now.Add(ttl)
	}
	l.counters[key] = c
	return c.v, nil
}

// Allow implements [Limiter].
func (l *Local) Allow(_ context.Context, key string, r Rate) (Decision, error) {
	if err := CheckKey("limit key", key, 0, false); err != nil {
		return Decision{}, err
	}
	if err := r.Validate(); err != nil {
		return Decision{}, err
	}
	now, err := l.begin()
	if err != nil {
		return Decision{}, err
	}
	defer l.mu.Unlock()
	lg := l.logs[key]
	if lg == nil {
		lg = &localLog{}
		l.logs[key] = lg
	}
	lg.per = r.Per
	lg.trim(now)
	if len(lg.at) >= r.N {
		return Decision{RetryAfter: lg.at[0].Add(r.Per).Sub(now)}, nil
	}
	lg.at = append(lg.at, now)
	return Decision{Allowed: true, Remaining: r.N - len(lg.at)}, nil
}

// Acquire implements [Semaphore].
func (l *Local) Acquire(_ context.Context, key string, size int, ttl time.Duration) (string, error) {
	if err := CheckKey("semaphore key", key, ttl, true); err != nil {
		return "", err
	}
	if size < 1 {
		return "", fmt.Errorf("%w: semaphore size %d", ErrInvalid, size)
	}
	now, err := l.begin()
	if err != nil {
		return "", err
	}
	defer l.mu.Unlock()
	leases := l.sems[key]
	if leases == nil {
		leases = make(map[string]time.Time)
		l.sems[key] = leases
	}
	trimLeases(leases, now)
	if len(leases) >= size {
		return "", ErrFull
	}
	token := NewToken()
	leases[token] = now.Add(ttl)
	return token, nil
}

// Release implements [Semaphore].
func (l *Local) Release(_ context.Context, key, token string) error {
	now, err := l.begin()
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	exp, ok := l.sems[key][token]
	if !ok || !now.Before(exp) {
		return ErrNotHeld
	}
	delete(l.sems[key], token)
	return nil
}

// ExtendLease implements [Semaphore].
func (l *Local) ExtendLease(_ context.Context, key, token string, ttl time.Duration) error {
	if err := CheckKey("semaphore key", key, ttl, true); err != nil {
		return err
	}
	now, err := l.begin()
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	exp, ok := l.sems[key][token]
	if !ok || !now.Before(exp) {
		return ErrNotHeld
	}
	l.sems[key][token] = now.Add(ttl)
	return nil
}

func trimLeases(leases map[string]time.Time, now time.Time) {
	for t, exp := range leases {
		if !now.Before(exp) {
			delete(leases, t)
		}
	}
}

// Lock implements [Locker].
func (l *Local) Lock(_ context.Context, key string, ttl time.Duration) (string, error) {
	if err := CheckKey("lock key", key, ttl, true); err != nil {
		return "", err
	}
	now, err := l.begin()
	if err != nil {
		return "", err
	}
	defer l.mu.Unlock()
	if lk, ok := l.locks[key]; ok && now.Before(lk.exp) {
		return "", ErrLocked
	}
	token := NewToken()
	l.locks[key] = localLock{token: token, exp: now.Add(ttl)}
	return token, nil
}

// Unlock implements [Locker].
func (l *Local) Unlock(_ context.Context, key, token string) error {
	now, err := l.begin()
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	if lk, ok := l.locks[key]; !ok || lk.token != token || !now.Before(lk.exp) {
		return ErrNotHeld
	}
	delete(l.locks, key)
	return nil
}

// ExtendLock implements [Locker].
func (l *Local) ExtendLock(_ context.Context, key, token string, ttl time.Duration) error {
	if err := CheckKey("lock key", key, ttl, true); err != nil {
		return err
	}
	now, err := l.begin()
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	lk, ok := l.locks[key]
	if !ok || lk.token != token || !now.Before(lk.exp) {
		return ErrNotHeld
	}
	lk.exp = now.Add(ttl)
	l.locks[key] = lk
	return nil
}
