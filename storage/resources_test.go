package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestResourceStores(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()

		t.Run("concurrent event appends get unique, gap-free sequence numbers", func(t *testing.T) {
			f := newFixture(t, db)
			c, err := f.s.Calls.CreateCall(ctx, storage.Call{OrgID: f.org.ID, Direction: storage.DirectionWeb, Status: storage.CallInProgress})
			require.NoError(t, err)
			const writers, each = 6, 5
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						// Every event is sent twice, as a redelivering stream would.
						e := storage.CallEventRow{EventID: fmt.Sprintf("w%d-%d", w, i), Kind: "dtmf", At: time.Now(), Data: json.RawMessage(`{"digits":"1"}`)}
						if _, err := f.s.Calls.AppendCallEvents(ctx, c.ID, []storage.CallEventRow{e, e}); err != nil {
							errs[w] = err
							return
						}
						if _, err := f.s.Calls.AppendCallEvents(ctx, c.ID, []storage.CallEventRow{e}); err != nil {
							errs[w] = err
							return
						}
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			evs, err := f.s.Calls.CallEvents(ctx, []int64{c.ID})
			require.NoError(t, err)
			require.Len(t, evs, writers*each)
			for i, e := range evs {
				require.Equal(t, int64(i+1), e.Seq)
			}
		})

		t.Run("opposite transfers at once do not deadlock", func(t *testing.T) {
			f := newFixture(t, db)
			other, err := f.s.Orgs.CreateOrg(ctx, f.owner.ID, "Other")
			require.NoError(t, err)
			mk := func(org int64, number string) storage.PhoneNumber {
				n, err := f.s.Numbers.CreateDemoNumber(ctx, org, nil, []storage.PhoneNumber{{Number: number}})
				require.NoError(t, err)
				return n
			}
			for round := range 4 {
				a := mk(f.org.ID, fmt.Sprintf("+1555000%04d", 2*round))
				b := mk(other.ID, fmt.Sprintf("+1555000%04d", 2*round+1))
				var wg sync.WaitGroup
				var e1, e2 error
				wg.Go(func() { _, _, e1 = f.s.Numbers.TransferPhoneNumber(ctx, f.org.ID, other.ID, a.ID, f.owner.ID) })
				wg.Go(func() { _, _, e2 = f.s.Numbers.TransferPhoneNumber(ctx, other.ID, f.org.ID, b.ID, f.owner.ID) })
				wg.Wait()
				require.NoError(t, e1, "round %d", round)
				require.NoError(t, e2, "round %d", round)
				_, err := f.s.Numbers.PhoneNumber(ctx, other.ID, a.ID)
				require.NoError(t, err)
				_, err = f.s.Numbers.PhoneNumber(ctx, f.org.ID, b.ID)
				require.NoError(t, err)
			}
			// Only admins of both orgs may transfer.
			n := mk(f.org.ID, "+15550009999")
			_, _, err = f.s.Numbers.TransferPhoneNumber(ctx, f.org.ID, other.ID, n.ID, f.admin.ID)
			require.ErrorIs(t, err, storage.ErrNotMember)
			_, _, err = f.s.Numbers.TransferPhoneNumber(ctx, f.org.ID, f.org.ID, n.ID, f.owner.ID)
			require.ErrorIs(t, err, storage.ErrSameOrg)
		})

		t.Run("a demo number goes to exactly one of many racing orgs", func(t *testing.T) {
			const racers = 6
			orgs := make([]int64, racers)
			for i := range orgs {
				orgs[i] = newFixture(t, db).org.ID
			}
			var wg sync.WaitGroup
			got := make([]error, racers)
			for i := range racers {
				wg.Go(func() {
					_, got[i] = claimContested(ctx, db, orgs[i])
				})
			}
			wg.Wait()
			won := 0
			for _, err := range got {
				if err == nil {
					won++
				} else {
					require.ErrorIs(t, err, storage.ErrNoneAvailable)
				}
			}
			require.Equal(t, 1, won)
		})
	})
}

// claimContested asks for the one contested demo number on a store of its own.
func claimContested(ctx context.Context, db *storage.DB, org int64) (storage.PhoneNumber, error) {
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	if err != nil {
		return storage.PhoneNumber{}, err
	}
	return s.Numbers.CreateDemoNumber(ctx, org, nil, []storage.PhoneNumber{{Number: "+15559990000"}})
}
