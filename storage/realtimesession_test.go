package storage_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestRealtimeSessionTokens(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		// Two replicas over one database, on one (test) clock.
		var now atomic.Int64
		now.Store(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC).UnixMilli())
		clock := func() time.Time { return time.UnixMilli(now.Load()) }
		a, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32), Now: clock})
		require.NoError(t, err)
		b, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32), Now: clock})
		require.NoError(t, err)
		call := func() int64 {
			c, err := f.s.Calls.CreateCall(ctx, storage.Call{OrgID: f.org.ID, Direction: storage.DirectionWeb, Status: storage.CallInProgress})
			require.NoError(t, err)
			return c.ID
		}
		exp := clock().Add(time.Minute)

		// Created on one replica, claimed on the other, once.
		c1 := call()
		grant := []byte(`{"CallID":1,"Inline":true,"Agent":{"prompt":"Inline prompt"}}`)
		require.NoError(t, a.Calls.CreateRealtimeSessionToken(ctx, storage.RealtimeSessionToken{CallID: c1, OrgID: f.org.ID, NonceHash: "n1", Grant: grant, ExpiresAt: exp}))
		require.ErrorIs(t, a.Calls.CreateRealtimeSessionToken(ctx, storage.RealtimeSessionToken{CallID: c1, OrgID: f.org.ID, NonceHash: "n9", Grant: grant, ExpiresAt: exp}),
			storage.ErrConflict, "one token per call")
		_, err = b.Calls.ClaimRealtimeSessionToken(ctx, c1, "wrong")
		require.ErrorIs(t, err, storage.ErrNotFound)
		got, err := b.Calls.ClaimRealtimeSessionToken(ctx, c1, "n1")
		require.NoError(t, err)
		require.Equal(t, f.org.ID, got.OrgID)
		require.JSONEq(t, string(grant), string(got.Grant))
		require.Equal(t, exp.UnixMilli(), got.ExpiresAt.UnixMilli())
		_, err = a.Calls.ClaimRealtimeSessionToken(ctx, c1, "n1")
		require.ErrorIs(t, err, storage.ErrNotFound, "claimed twice")

		// Concurrent claims from both replicas: one wins.
		c2 := call()
		require.NoError(t, a.Calls.CreateRealtimeSessionToken(ctx, storage.RealtimeSessionToken{CallID: c2, OrgID: f.org.ID, NonceHash: "n2", Grant: grant, ExpiresAt: exp}))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for _, s := range []*storage.Store{a, b, a, b} {
			wg.Go(func() {
				if _, err := s.Calls.ClaimRealtimeSessionToken(ctx, c2, "n2"); err == nil {
					wins.Add(1)
				} else {
					require.ErrorIs(t, err, storage.ErrNotFound)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load())

		// Expiry: a token past its time cannot be claimed, and the sweeps
		// of both replicas hand each expired call to one of them.
		c3, c4 := call(), call()
		for _, c := range []int64{c3, c4} {
			require.NoError(t, a.Calls.CreateRealtimeSessionToken(ctx, storage.RealtimeSessionToken{CallID: c, OrgID: f.org.ID, NonceHash: "n", Grant: grant, ExpiresAt: exp}))
		}
		ids, err := b.Calls.ExpireRealtimeSessionTokens(ctx)
		require.NoError(t, err)
		require.Empty(t, ids, "nothing expired yet")
		now.Add(time.Minute.Milliseconds() + 1)
		_, err = b.Calls.ClaimRealtimeSessionToken(ctx, c3, "n")
		require.ErrorIs(t, err, storage.ErrNotFound, "expired")
		var mu sync.Mutex
		var swept []int64
		for _, s := range []*storage.Store{a, b} {
			wg.Go(func() {
				ids, err := s.Calls.ExpireRealtimeSessionTokens(ctx)
				require.NoError(t, err)
				mu.Lock()
				swept = append(swept, ids...)
				mu.Unlock()
			})
		}
		wg.Wait()
		require.ElementsMatch(t, []int64{c3, c4}, swept)
	})
}
