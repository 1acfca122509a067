package billing_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/billing"
	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/control/payment/paymenttest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// counting wraps a Charger and counts charges.
type counting struct {
	billing.Charger
	n atomic.Int64
}

func (c *counting) Charge(ctx context.Context, ch payment.Charge) (payment.Intent, error) {
	c.n.Add(1)
	return c.Charger.Charge(ctx, ch)
}

// scripted answers every charge with err (or intent when err is nil).
type scripted struct {
	err    error
	intent payment.Intent
	keys   []string
}

func (s *scripted) Charge(_ context.Context, ch payment.Charge) (payment.Intent, error) {
	s.keys = append(s.keys, ch.IdempotencyKey)
	return s.intent, s.err
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// reloadOrg returns an org funded with balance, with a provider customer,
// a default card and auto-reload on (minimum, amount).
func reloadOrg(t *testing.T, s *storage.Store, balance, minimum, amount int64) int64 {
	t.Helper()
	ctx := context.Background()
	u, err := s.Orgs.CreateUser(ctx, "reload-"+storage.NewUUID()+"@example.com", "R", "Eload")
	require.NoError(t, err)
	o, err := s.Orgs.CreateOrg(ctx, u.ID, "Reload")
	require.NoError(t, err)
	if balance > 0 {
		_, err = s.Billing.Post(ctx, o.ID, storage.TxAdjustment, balance, "seed", "")
		require.NoError(t, err)
	}
	_, err = s.Billing.SetProviderCustomer(ctx, o.ID, "cus_reload")
	require.NoError(t, err)
	_, err = s.Billing.SetDefaultPaymentMethod(ctx, o.ID, "pm_card_visa")
	require.NoError(t, err)
	on := true
	_, err = s.Billing.UpdateAutoReload(ctx, o.ID, storage.AutoReloadPatch{Enabled: &on, MinimumCents: &minimum, AmountCents: &amount})
	require.NoError(t, err)
	return o.ID
}

func newStore(t *testing.T, db *storage.DB, now func() time.Time) *storage.Store {
	t.Helper()
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: bytes.Repeat([]byte{5}, 32), Now: now})
	require.NoError(t, err)
	return s
}

func TestReloadAgainstStripeMock(t *testing.T) {
	base := paymenttest.Start(t, paymenttest.Succeeded)
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		st, err := payment.NewStripe(payment.Config{APIKey: "sk_test_voiced", APIBase: base})
		require.NoError(t, err)
		charger := &counting{Charger: st}
		r, err := billing.NewReloader(billing.Config{}, nil, s.Billing, charger)
		require.NoError(t, err)
		org := reloadOrg(t, s, 1500, 1000, 2500)

		// 50 concurrent debits; from the 26th on, each one crosses the
		// minimum. Exactly one reload starts and is charged once.
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				if _, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -20, "call", fmt.Sprint("call-", i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		n, err := r.ReloadDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, int64(1), charger.n.Load())
		bal, err := s.Billing.Balance(ctx, org)
		require.NoError(t, err)
		require.Equal(t, int64(1500-1000+2500), bal)

		rs, err := s.Billing.Reloads(ctx, org)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		require.Equal(t, storage.ReloadSucceeded, rs[0].Status)
		txs, _ := s.Billing.Transactions(ctx, org, 1, 0)
		require.Equal(t, storage.TxTopUp, txs[0].Kind)
		require.Equal(t, rs[0].PaymentIntentID, txs[0].Reference)
		a, _ := s.Billing.BillingAccount(ctx, org)
		require.True(t, a.HasEverToppedUp)

		// The provider's own payment-succeeded event, delivered twice,
		// changes nothing.
		for range 2 {
			_, err = s.Billing.ApplyProviderEvent(ctx, storage.ProviderEvent{ID: "evt_" + rs[0].PaymentIntentID, Kind: storage.EventPaymentSucceeded,
				PaymentID: rs[0].PaymentIntentID, AmountCents: 2500, OrgID: org, Purpose: storage.PurposeAutoReload, ReloadID: rs[0].ID})
			require.NoError(t, err)
		}
		bal, _ = s.Billing.Balance(ctx, org)
		require.Equal(t, int64(3000), bal)
		n, _ = r.ReloadDue(ctx)
		require.Zero(t, n)
	})
}

func TestReloadOutcomes(t *testing.T) {
	db := sqltest.New(t, "sqlite")
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)}
	s := newStore(t, db, clk.Now)

	t.Run("transient errors retry the same attempt, then give up", func(t *testing.T) {
		org := reloadOrg(t, s, 0, 100, 500)
		ch := &scripted{err: payment.Unavailable(errors.New("connection refused"))}
		r, _ := billing.NewReloader(billing.Config{Now: clk.Now, Backoff: []time.Duration{time.Minute, 5 * time.Minute}}, nil, s.Billing, ch)
		n, err := r.ReloadDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, _ = r.ReloadDue(ctx)
		require.Zero(t, n, "waits for its backoff")
		clk.Add(time.Minute)
		n, _ = r.ReloadDue(ctx)
		require.Equal(t, 1, n)
		clk.Add(5 * time.Minute)
		n, _ = r.ReloadDue(ctx)
		require.Equal(t, 1, n)
		require.Len(t, ch.keys, 3)
		require.Equal(t, ch.keys[0], ch.keys[2], "one attempt, one idempotency key")
		rs, _ := s.Billing.Reloads(ctx, org)
		require.Equal(t, storage.ReloadFailed, rs[0].Status)
		require.Equal(t, payment.CodeProviderUnavailable, rs[0].ErrorCode)
		a, _ := s.Billing.BillingAccount(ctx, org)
		require.Nil(t, a.AutoReloadFailedAt, "an outage is not the user's to fix")
	})

	t.Run("a decline turns auto-reload off until the card changes", func(t *testing.T) {
		org := reloadOrg(t, s, 0, 100, 500)
		ch := &scripted{err: &payment.Error{Status: 402, Code: payment.CodeCardDeclined}}
		r, _ := billing.NewReloader(billing.Config{Now: clk.Now}, nil, s.Billing, ch)
		_, err := r.ReloadDue(ctx)
		require.NoError(t, err)
		rs, _ := s.Billing.Reloads(ctx, org)
		require.Equal(t, storage.ReloadFailed, rs[0].Status)
		a, _ := s.Billing.BillingAccount(ctx, org)
		require.NotNil(t, a.AutoReloadFailedAt)
	})

	t.Run("an intent that needs the user fails off-session", func(t *testing.T) {
		org := reloadOrg(t, s, 0, 100, 500)
		ch := &scripted{intent: payment.Intent{ID: "pi_3ds", Status: "requires_action"}}
		r, _ := billing.NewReloader(billing.Config{Now: clk.Now}, nil, s.Billing, ch)
		_, err := r.ReloadDue(ctx)
		require.NoError(t, err)
		rs, _ := s.Billing.Reloads(ctx, org)
		require.Equal(t, storage.ReloadFailed, rs[0].Status)
		require.Equal(t, payment.CodeAuthenticationRequired, rs[0].ErrorCode)
		bal, _ := s.Billing.Balance(ctx, org)
		require.Zero(t, bal)
	})

	t.Run("a processing payment is settled by the provider's event", func(t *testing.T) {
		org := reloadOrg(t, s, 0, 100, 500)
		ch := &scripted{intent: payment.Intent{ID: "pi_slow", Status: "processing"}}
		r, _ := billing.NewReloader(billing.Config{Now: clk.Now}, nil, s.Billing, ch)
		_, err := r.ReloadDue(ctx)
		require.NoError(t, err)
		rs, _ := s.Billing.Reloads(ctx, org)
		require.Equal(t, storage.ReloadProcessing, rs[0].Status)
		_, err = s.Billing.ApplyProviderEvent(ctx, storage.ProviderEvent{ID: "evt_slow", Kind: storage.EventPaymentSucceeded, PaymentID: "pi_slow", AmountCents: 500})
		require.NoError(t, err)
		rs, _ = s.Billing.Reloads(ctx, org)
		require.Equal(t, storage.ReloadSucceeded, rs[0].Status)
		bal, _ := s.Billing.Balance(ctx, org)
		require.Equal(t, int64(500), bal)
	})
}
