package storage_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// clock is an injectable, advanceable store clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// billingOrg returns a store on db (with clock c when non-nil) and a new
// org funded with balance cents.
func billingOrg(t *testing.T, db *storage.DB, c *clock, balance int64) (*storage.Store, int64) {
	t.Helper()
	ctx := context.Background()
	cfg := storage.StoreConfig{SecretKey: make([]byte, 32)}
	if c != nil {
		cfg.Now = c.now
	}
	s, err := storage.NewStore(db, cfg)
	require.NoError(t, err)
	u, err := s.Orgs.CreateUser(ctx, "billing-"+storage.NewUUID()+"@example.com", "B", "Illing")
	require.NoError(t, err)
	o, err := s.Orgs.CreateOrg(ctx, u.ID, "Billing")
	require.NoError(t, err)
	if balance > 0 {
		_, err = s.Billing.Post(ctx, o.ID, storage.TxAdjustment, balance, "seed", "")
		require.NoError(t, err)
	}
	return s, o.ID
}

// claimReloads claims due reloads and keeps orgID's: subtests share a
// database, and the queue is global.
func claimReloads(t *testing.T, s *storage.Store, orgID int64, now time.Time) ([]storage.Reload, error) {
	t.Helper()
	all, err := s.Billing.ClaimReloads(context.Background(), now, time.Minute, 1000)
	var out []storage.Reload
	for _, r := range all {
		if r.OrgID == orgID {
			out = append(out, r)
		}
	}
	return out, err
}

// checkLedger asserts the ledger invariants: every row moves the balance
// by exactly its amount (each transaction sums to zero against the balance
// change), the balance never goes negative, and the stored balance equals
// the sum of all entries.
func checkLedger(t *testing.T, s *storage.Store, orgID int64) {
	t.Helper()
	ctx := context.Background()
	txs, err := s.Billing.Transactions(ctx, orgID, 1_000_000, 0)
	require.NoError(t, err)
	var sum, prev int64
	for i := len(txs) - 1; i >= 0; i-- { // oldest first
		tx := txs[i]
		require.Equal(t, prev+tx.AmountCents, tx.BalanceAfterCents, "ledger row %d does not add up", tx.ID)
		require.GreaterOrEqual(t, tx.BalanceAfterCents, int64(0))
		prev = tx.BalanceAfterCents
		sum += tx.AmountCents
	}
	bal, err := s.Billing.Balance(ctx, orgID)
	require.NoError(t, err)
	require.Equal(t, sum, bal, "stored balance differs from the sum of the ledger")
}

func TestLedger(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()

		t.Run("random sequence keeps the invariants", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			r := rand.New(rand.NewPCG(1, 2))
			var want int64
			for i := range 300 {
				amount := r.Int64N(2000) - 1000
				if amount == 0 {
					amount = 1
				}
				kind := []storage.TxKind{storage.TxTopUp, storage.TxCallUsage, storage.TxNumberFee, storage.TxAdjustment}[r.IntN(4)]
				ref := ""
				if r.IntN(3) == 0 {
					ref = fmt.Sprint("ref-", r.IntN(40)) // repeats: applied once per (kind, ref)
				}
				_, err := s.Billing.Post(ctx, org, kind, amount, fmt.Sprint("op ", i), ref)
				switch {
				case err == nil:
					want += amount
				case errors.Is(err, storage.ErrInsufficientFunds):
					require.Less(t, want+amount, int64(0))
				case errors.Is(err, storage.ErrConflict):
					require.NotEmpty(t, ref)
				default:
					require.NoError(t, err)
				}
			}
			bal, err := s.Billing.Balance(ctx, org)
			require.NoError(t, err)
			require.Equal(t, want, bal)
			checkLedger(t, s, org)
		})

		t.Run("concurrent mixed posts keep the invariants", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 500)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(g), 9))
					for range 25 {
						amount := r.Int64N(300) - 200
						if amount == 0 {
							amount = -1
						}
						_, err := s.Billing.Post(ctx, org, storage.TxCallUsage, amount, "", "")
						if err != nil && !errors.Is(err, storage.ErrInsufficientFunds) {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			checkLedger(t, s, org)
		})

		for _, tc := range []struct{ balance, x int64 }{{1000, 17}, {100_000, 25}, {99, 100}, {1700, 17}} {
			t.Run(fmt.Sprintf("100 concurrent debits of %d against %d", tc.x, tc.balance), func(t *testing.T) {
				s, org := billingOrg(t, db, nil, tc.balance)
				var ok, short atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range 100 {
					wg.Go(func() {
						<-start
						_, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -tc.x, "call", fmt.Sprint("call-", i))
						switch {
						case err == nil:
							ok.Add(1)
						case errors.Is(err, storage.ErrInsufficientFunds):
							short.Add(1)
						default:
							t.Error(err)
						}
					})
				}
				close(start)
				wg.Wait()
				want := min(100, tc.balance/tc.x)
				require.Equal(t, want, ok.Load())
				require.Equal(t, 100-want, short.Load())
				bal, err := s.Billing.Balance(ctx, org)
				require.NoError(t, err)
				require.Equal(t, tc.balance-want*tc.x, bal)
				checkLedger(t, s, org)
			})
		}

		t.Run("replayed usage records change nothing", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 1000)
			var applied atomic.Int64
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					_, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -40, "call 7", "call:7")
					if err == nil {
						applied.Add(1)
					} else if !errors.Is(err, storage.ErrConflict) {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			require.Equal(t, int64(1), applied.Load())
			// The same reference under another kind is another entry.
			_, err := s.Billing.Post(ctx, org, storage.TxNumberFee, -100, "fee", "call:7")
			require.NoError(t, err)
			bal, _ := s.Billing.Balance(ctx, org)
			require.Equal(t, int64(860), bal)
			checkLedger(t, s, org)
		})
	})
}

func TestProviderEvents(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()

		t.Run("a payment credits once however often it is reported", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			credited, err := s.Billing.RecordPayment(ctx, storage.Payment{ID: "pi_1", OrgID: org, Purpose: storage.PurposeTopUp, AmountCents: 700, Status: "requires_action"})
			require.NoError(t, err)
			require.False(t, credited)
			a, _ := s.Billing.BillingAccount(ctx, org)
			require.False(t, a.HasEverToppedUp)

			ev := storage.ProviderEvent{ID: "evt_1", Kind: storage.EventPaymentSucceeded, Type: "payment_intent.succeeded", PaymentID: "pi_1", AmountCents: 700}
			var applied atomic.Int64
			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() {
					ok, err := s.Billing.ApplyProviderEvent(ctx, ev)
					if err != nil {
						t.Error(err)
					}
					if ok {
						applied.Add(1)
					}
				})
			}
			wg.Wait()
			require.Equal(t, int64(1), applied.Load())
			// A second event for the same payment (another id) and the
			// synchronous path reporting success again credit nothing more.
			ev.ID = "evt_2"
			ok, err := s.Billing.ApplyProviderEvent(ctx, ev)
			require.NoError(t, err)
			require.True(t, ok)
			credited, err = s.Billing.RecordPayment(ctx, storage.Payment{ID: "pi_1", OrgID: org, Purpose: storage.PurposeTopUp, AmountCents: 700, Status: "succeeded"})
			require.NoError(t, err)
			require.False(t, credited)
			bal, _ := s.Billing.Balance(ctx, org)
			require.Equal(t, int64(700), bal)
			a, _ = s.Billing.BillingAccount(ctx, org)
			require.True(t, a.HasEverToppedUp)
			p, err := s.Billing.PaymentByID(ctx, "pi_1")
			require.NoError(t, err)
			require.Equal(t, "succeeded", p.Status)
			checkLedger(t, s, org)
		})

		t.Run("unknown payments credit the org in metadata or nobody", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			_, err := s.Billing.ApplyProviderEvent(ctx, storage.ProviderEvent{ID: "evt_x", Kind: storage.EventPaymentSucceeded, PaymentID: "pi_foreign", AmountCents: 100})
			require.ErrorIs(t, err, storage.ErrUnknownPayment)
			ok, err := s.Billing.ApplyProviderEvent(ctx, storage.ProviderEvent{ID: "evt_y", Kind: storage.EventPaymentSucceeded, PaymentID: "pi_lost", AmountCents: 250, OrgID: org})
			require.NoError(t, err)
			require.True(t, ok)
			bal, _ := s.Billing.Balance(ctx, org)
			require.Equal(t, int64(250), bal)
		})

		t.Run("setup succeeded sets the default payment method", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			cus, err := s.Billing.SetProviderCustomer(ctx, org, "cus_A")
			require.NoError(t, err)
			require.Equal(t, "cus_A", cus)
			cus, err = s.Billing.SetProviderCustomer(ctx, org, "cus_B")
			require.NoError(t, err)
			require.Equal(t, "cus_A", cus, "the first customer stays")
			_, err = s.Billing.ApplyProviderEvent(ctx, storage.ProviderEvent{ID: "evt_s", Kind: storage.EventSetupSucceeded, CustomerID: "cus_A", PaymentMethod: "pm_1"})
			require.NoError(t, err)
			a, err := s.Billing.BillingAccount(ctx, org)
			require.NoError(t, err)
			require.Equal(t, "pm_1", a.DefaultPaymentMethod)
		})
	})
}

func TestAutoReload(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		enable := func(t *testing.T, s *storage.Store, org, minimum, amount int64, limit *int64) {
			t.Helper()
			_, err := s.Billing.SetDefaultPaymentMethod(ctx, org, "pm_card")
			require.NoError(t, err)
			on := true
			_, err = s.Billing.UpdateAutoReload(ctx, org, storage.AutoReloadPatch{Enabled: &on, MinimumCents: &minimum, AmountCents: &amount, SetMonthlyLimit: true, MonthlyLimitCents: limit})
			require.NoError(t, err)
		}

		t.Run("enabling needs a default payment method", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			on := true
			_, err := s.Billing.UpdateAutoReload(ctx, org, storage.AutoReloadPatch{Enabled: &on})
			require.ErrorIs(t, err, storage.ErrNoPaymentMethod)
			zero := int64(0)
			a, err := s.Billing.UpdateAutoReload(ctx, org, storage.AutoReloadPatch{SetMonthlyLimit: true, MonthlyLimitCents: &zero})
			require.NoError(t, err)
			require.Nil(t, a.AutoReloadMonthlyLimitCents, "0 means no cap")
		})

		t.Run("50 concurrent threshold crossings start exactly one reload", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 6000)
			enable(t, s, org, 6000, 2500, nil)
			rs, _ := s.Billing.Reloads(ctx, org)
			require.Empty(t, rs, "balance is not below the minimum yet")
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 50 {
				wg.Go(func() {
					<-start
					if _, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -10, "call", fmt.Sprint("c", i)); err != nil {
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			rs, err := s.Billing.Reloads(ctx, org)
			require.NoError(t, err)
			require.Len(t, rs, 1)
			require.Equal(t, storage.ReloadPending, rs[0].Status)
			require.Equal(t, int64(2500), rs[0].AmountCents)
			checkLedger(t, s, org)
		})

		t.Run("a claimed reload credits once and frees the slot", func(t *testing.T) {
			c := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
			s, org := billingOrg(t, db, c, 1000)
			enable(t, s, org, 500, 2000, nil)
			_, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -600, "call", "c1")
			require.NoError(t, err)
			claimed, err := claimReloads(t, s, org, c.now())
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			r := claimed[0]
			require.Equal(t, "pm_card", r.PaymentMethod)
			again, err := claimReloads(t, s, org, c.now())
			require.NoError(t, err)
			require.Empty(t, again, "a leased reload is not claimed twice")

			require.NoError(t, s.Billing.FinishReload(ctx, r, storage.ReloadOutcome{Status: storage.ReloadSucceeded, PaymentIntentID: "pi_r1"}))
			require.NoError(t, s.Billing.FinishReload(ctx, r, storage.ReloadOutcome{Status: storage.ReloadSucceeded, PaymentIntentID: "pi_r1"}), "a repeated finish is a no-op")
			_, err = s.Billing.ApplyProviderEvent(ctx, storage.ProviderEvent{ID: "evt_r1", Kind: storage.EventPaymentSucceeded, PaymentID: "pi_r1", AmountCents: 2000})
			require.NoError(t, err)
			bal, _ := s.Billing.Balance(ctx, org)
			require.Equal(t, int64(2400), bal)
			rs, _ := s.Billing.Reloads(ctx, org)
			require.Equal(t, storage.ReloadSucceeded, rs[0].Status)
			a, _ := s.Billing.BillingAccount(ctx, org)
			require.True(t, a.HasEverToppedUp)

			// Below the minimum again: a new attempt with a new key.
			_, err = s.Billing.Post(ctx, org, storage.TxCallUsage, -2000, "call", "c2")
			require.NoError(t, err)
			rs, _ = s.Billing.Reloads(ctx, org)
			require.Len(t, rs, 2)
			require.NotEqual(t, rs[0].ID, rs[1].ID)
			checkLedger(t, s, org)
		})

		t.Run("transient errors retry the same attempt; declines stop reloads until the card changes", func(t *testing.T) {
			c := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
			s, org := billingOrg(t, db, c, 100)
			enable(t, s, org, 500, 1000, nil)
			claimed, err := claimReloads(t, s, org, c.now())
			require.NoError(t, err)
			require.Len(t, claimed, 1, "enabling below the minimum queues a reload at once")
			id := claimed[0].ID
			require.NoError(t, s.Billing.FinishReload(ctx, claimed[0], storage.ReloadOutcome{Status: storage.ReloadPending, ErrorCode: "billing_provider_unavailable", RetryAt: c.now().Add(time.Minute)}))
			claimed, _ = claimReloads(t, s, org, c.now())
			require.Empty(t, claimed, "not due yet")
			c.add(time.Minute)
			claimed, _ = claimReloads(t, s, org, c.now())
			require.Len(t, claimed, 1)
			require.Equal(t, id, claimed[0].ID, "a retry keeps the idempotency key")
			require.Equal(t, 1, claimed[0].Tries)
			require.NoError(t, s.Billing.FinishReload(ctx, claimed[0], storage.ReloadOutcome{Status: storage.ReloadFailed, ErrorCode: "card_declined", UserAction: true}))
			a, _ := s.Billing.BillingAccount(ctx, org)
			require.NotNil(t, a.AutoReloadFailedAt)
			_, err = s.Billing.Post(ctx, org, storage.TxCallUsage, -10, "call", "")
			require.NoError(t, err)
			rs, _ := s.Billing.Reloads(ctx, org)
			require.Len(t, rs, 1, "no new reload after a decline")
			_, err = s.Billing.SetDefaultPaymentMethod(ctx, org, "pm_new")
			require.NoError(t, err)
			rs, _ = s.Billing.Reloads(ctx, org)
			require.Len(t, rs, 2, "a new card queues a reload")
			require.Equal(t, storage.ReloadPending, rs[0].Status)
		})

		t.Run("the calendar-month cap counts in-flight and succeeded reloads", func(t *testing.T) {
			c := &clock{t: time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)}
			s, org := billingOrg(t, db, c, 100)
			limit := int64(3000)
			enable(t, s, org, 500, 2000, &limit)
			claimed, _ := claimReloads(t, s, org, c.now())
			require.Len(t, claimed, 1)
			require.NoError(t, s.Billing.FinishReload(ctx, claimed[0], storage.ReloadOutcome{Status: storage.ReloadSucceeded, PaymentIntentID: "pi_m1"}))
			_, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -2000, "call", "")
			require.NoError(t, err)
			rs, _ := s.Billing.Reloads(ctx, org)
			require.Len(t, rs, 1, "2000 + 2000 exceeds the 3000 cap")
			c.add(2 * time.Hour) // April, UTC
			_, err = s.Billing.Post(ctx, org, storage.TxCallUsage, -1, "call", "")
			require.NoError(t, err)
			rs, _ = s.Billing.Reloads(ctx, org)
			require.Len(t, rs, 2, "a new month, a new cap")
		})
	})
}
