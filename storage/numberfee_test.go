package storage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestNumberFees(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		s := f.s
		tag := storage.NewUUID()[30:]
		mk := func(num, source, status string) storage.PhoneNumber {
			n, err := s.Numbers.CreatePhoneNumber(ctx, storage.PhoneNumber{OrgID: f.org.ID, Number: num + tag, Source: source, Status: status}, nil)
			require.NoError(t, err)
			return n
		}
		mk("+1555000", "demo", "active")
		mk("+1555001", "demo", "active")
		mk("+1555002", "voip", "active")       // own trunk: no fee
		mk("+1555003", "demo", "provisioning") // not active yet
		mk("+1555004", "demo", "released")     // released: no fee
		_, err := s.Billing.Post(ctx, f.org.ID, storage.TxAdjustment, 150, "credit", "")
		require.NoError(t, err)

		nov := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
		// Concurrent sweeps (as on several replicas) charge each number once.
		var wg sync.WaitGroup
		runs := make([]storage.NumberFeeRun, 4)
		for i := range runs {
			wg.Go(func() {
				var err error
				runs[i], err = s.Billing.ChargeNumberFees(ctx, nov, 100)
				require.NoError(t, err)
			})
		}
		wg.Wait()
		charged := 0
		for _, r := range runs {
			charged += r.Charged
		}
		require.Equal(t, 1, charged, "150 cents cover one 100-cent fee")
		b, err := s.Billing.Balance(ctx, f.org.ID)
		require.NoError(t, err)
		require.Equal(t, int64(50), b)

		// The second fee stays due until the balance covers it, then is taken once.
		r, err := s.Billing.ChargeNumberFees(ctx, nov, 100)
		require.NoError(t, err)
		require.Equal(t, storage.NumberFeeRun{Charged: 0, Due: 1}, r)
		_, err = s.Billing.Post(ctx, f.org.ID, storage.TxAdjustment, 500, "top up", "")
		require.NoError(t, err)
		r, err = s.Billing.ChargeNumberFees(ctx, nov.Add(48*time.Hour), 100)
		require.NoError(t, err)
		require.Equal(t, storage.NumberFeeRun{Charged: 1}, r)
		r, err = s.Billing.ChargeNumberFees(ctx, nov.Add(72*time.Hour), 100)
		require.NoError(t, err)
		require.Equal(t, storage.NumberFeeRun{}, r, "nothing more this month")

		// A new month charges both again.
		r, err = s.Billing.ChargeNumberFees(ctx, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 100)
		require.NoError(t, err)
		require.Equal(t, storage.NumberFeeRun{Charged: 2}, r)
		b, err = s.Billing.Balance(ctx, f.org.ID)
		require.NoError(t, err)
		require.Equal(t, int64(150+500-400), b)
		txs, err := s.Billing.Transactions(ctx, f.org.ID, 100, 0)
		require.NoError(t, err)
		fees := 0
		for _, tx := range txs {
			if tx.Kind == storage.TxNumberFee {
				fees++
				require.Equal(t, int64(-100), tx.AmountCents)
			}
		}
		require.Equal(t, 4, fees)
	})
}
