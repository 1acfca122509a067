package realtime

import (
	"context"
	"errors"
	"time"

	"github.com/voiced/voiced/storage/coord"
)

// ErrSessionLimit means every session slot of the key is taken.
var ErrSessionLimit = errors.New("session limit reached")

// SessionSlots bounds concurrent sessions per key (an organization's
// realtime sockets) with the coordinator's semaphore, across replicas.
type SessionSlots struct{ sem coord.Semaphore }

// SlotsOf returns the session slots of coordinator c, false when it has
// no semaphore (then sessions are not capped).
func SlotsOf(c any) (SessionSlots, bool) {
	sem, ok := c.(coord.Semaphore)
	return SessionSlots{sem}, ok
}

// Acquire takes one of size slots of key for ttl; ErrSessionLimit when
// all are taken.
func (s SessionSlots) Acquire(ctx context.Context, key string, size int, ttl time.Duration) (string, error) {
	tok, err := s.sem.Acquire(ctx, key, size, ttl)
	if errors.Is(err, coord.ErrFull) {
		return "", ErrSessionLimit
	}
	return tok, err
}

// Release frees the slot token holds.
func (s SessionSlots) Release(ctx context.Context, key, token string) error {
	return s.sem.Release(ctx, key, token)
}

// ExtendLease keeps the slot token holds for another ttl.
func (s SessionSlots) ExtendLease(ctx context.Context, key, token string, ttl time.Duration) error {
	return s.sem.ExtendLease(ctx, key, token, ttl)
}
