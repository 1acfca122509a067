package storage

import (
	"context"
	"database/sql"
	"time"
)

// BillingStore keeps prepaid billing: each organization's account and
// auto-reload settings, the ledger every balance change writes to, payments
// from the provider, the reload queue and monthly number fees. A call's
// charge (Store.BillCall) posts through it.
type BillingStore struct{ *base }

// BillingAccount is an org's prepaid account (spec section 2.1).
type BillingAccount struct {
	OrgID                  int64
	BalanceCents           int64
	AutoReloadEnabled      bool
	AutoReloadMinimumCents int64
	AutoReloadAmountCents  int64
	// AutoReloadMonthlyLimitCents is nil for no cap.
	AutoReloadMonthlyLimitCents *int64
	DefaultPaymentMethod        string
	HasEverToppedUp             bool
	// ProviderCustomerID is the payment provider's customer, empty until
	// the first provider call.
	ProviderCustomerID string
	// AutoReloadFailedAt is set when a reload failed for a reason only the
	// user can fix; no reload starts until the settings or the default
	// payment method change.
	AutoReloadFailedAt *time.Time
	UpdatedAt          time.Time
}

const accountSelect = `SELECT org_id, balance_cents, auto_reload_enabled, auto_reload_minimum_cents, auto_reload_amount_cents,
	auto_reload_monthly_limit_cents, COALESCE(default_payment_method, ''), has_ever_topped_up, COALESCE(provider_customer_id, ''),
	auto_reload_failed_at, updated_at FROM billing_accounts`

func scanAccount(r interface{ Scan(...any) error }) (BillingAccount, error) {
	var a BillingAccount
	var limit, failed sql.NullInt64
	var u int64
	err := r.Scan(&a.OrgID, &a.BalanceCents, &a.AutoReloadEnabled, &a.AutoReloadMinimumCents, &a.AutoReloadAmountCents,
		&limit, &a.DefaultPaymentMethod, &a.HasEverToppedUp, &a.ProviderCustomerID, &failed, &u)
	if err != nil {
		return BillingAccount{}, translate(err)
	}
	if limit.Valid {
		v := limit.Int64
		a.AutoReloadMonthlyLimitCents = &v
	}
	a.AutoReloadFailedAt = fromNullMS(failed)
	a.UpdatedAt = fromMS(u)
	return a, nil
}

// BillingAccount returns orgID's account.
func (s *BillingStore) BillingAccount(ctx context.Context, orgID int64) (BillingAccount, error) {
	return scanAccount(s.db.QueryRowContext(ctx, accountSelect+` WHERE org_id = $1`, orgID))
}

// AutoReloadPatch changes auto-reload settings; nil fields are unchanged.
type AutoReloadPatch struct {
	Enabled      *bool
	MinimumCents *int64
	AmountCents  *int64
	// SetMonthlyLimit says MonthlyLimitCents is given (nil or 0 = no cap).
	SetMonthlyLimit   bool
	MonthlyLimitCents *int64
}

// UpdateAutoReload applies p. Enabling without a default payment method is
// ErrNoPaymentMethod. Any change clears a previous reload failure, and when
// the new settings find the balance already below the minimum a reload is
// queued at once: an org at zero balance has no debits left to trigger one.
func (s *BillingStore) UpdateAutoReload(ctx context.Context, orgID int64, p AutoReloadPatch) (BillingAccount, error) {
	var a BillingAccount
	now := s.nowMS()
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockAccount(ctx, tx, orgID); err != nil {
			return err
		}
		cur, err := scanAccount(tx.QueryRowContext(ctx, accountSelect+` WHERE org_id = $1`, orgID))
		if err != nil {
			return err
		}
		if p.Enabled != nil {
			cur.AutoReloadEnabled = *p.Enabled
		}
		if p.MinimumCents != nil {
			cur.AutoReloadMinimumCents = *p.MinimumCents
		}
		if p.AmountCents != nil {
			cur.AutoReloadAmountCents = *p.AmountCents
		}
		if p.SetMonthlyLimit {
			cur.AutoReloadMonthlyLimitCents = nil
			if p.MonthlyLimitCents != nil && *p.MonthlyLimitCents > 0 {
				v := *p.MonthlyLimitCents
				cur.AutoReloadMonthlyLimitCents = &v
			}
		}
		if cur.AutoReloadEnabled && cur.DefaultPaymentMethod == "" {
			return ErrNoPaymentMethod
		}
		var limit any
		if cur.AutoReloadMonthlyLimitCents != nil {
			limit = *cur.AutoReloadMonthlyLimitCents
		}
		if _, err := tx.ExecContext(ctx, `UPDATE billing_accounts SET auto_reload_enabled = $1, auto_reload_minimum_cents = $2,
			auto_reload_amount_cents = $3, auto_reload_monthly_limit_cents = $4, auto_reload_failed_at = NULL, updated_at = $5 WHERE org_id = $6`,
			cur.AutoReloadEnabled, cur.AutoReloadMinimumCents, cur.AutoReloadAmountCents, limit, now, orgID); err != nil {
			return translate(err)
		}
		if err := s.reloadCheckTx(ctx, tx, orgID, now); err != nil {
			return err
		}
		a, err = scanAccount(tx.QueryRowContext(ctx, accountSelect+` WHERE org_id = $1`, orgID))
		return err
	})
	return a, err
}

// SetProviderCustomer records orgID's provider customer unless one is
// already recorded, and returns the one in effect: when two requests race
// to create a customer, both end up using the first one stored.
func (s *BillingStore) SetProviderCustomer(ctx context.Context, orgID int64, customerID string) (string, error) {
	var got string
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE billing_accounts SET provider_customer_id = $1 WHERE org_id = $2 AND provider_customer_id IS NULL`, customerID, orgID); err != nil {
			return translate(err)
		}
		return translate(tx.QueryRowContext(ctx, `SELECT COALESCE(provider_customer_id, '') FROM billing_accounts WHERE org_id = $1`, orgID).Scan(&got))
	})
	return got, err
}

// SetDefaultPaymentMethod makes pm orgID's default payment method, clears
// a previous reload failure and queues a reload if one is now due.
func (s *BillingStore) SetDefaultPaymentMethod(ctx context.Context, orgID int64, pm string) (BillingAccount, error) {
	var a BillingAccount
	now := s.nowMS()
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		a, err = s.setDefaultPMTx(ctx, tx, orgID, pm, now)
		return err
	})
	return a, err
}

func (s *BillingStore) setDefaultPMTx(ctx context.Context, tx *sql.Tx, orgID int64, pm string, now int64) (BillingAccount, error) {
	res, err := tx.ExecContext(ctx, `UPDATE billing_accounts SET default_payment_method = $1, auto_reload_failed_at = NULL, updated_at = $2 WHERE org_id = $3`, pm, now, orgID)
	if err != nil {
		return BillingAccount{}, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return BillingAccount{}, ErrNotFound
	}
	if err := s.reloadCheckTx(ctx, tx, orgID, now); err != nil {
		return BillingAccount{}, err
	}
	return scanAccount(tx.QueryRowContext(ctx, accountSelect+` WHERE org_id = $1`, orgID))
}

// PaymentPurpose says why a payment was taken.
type PaymentPurpose string

// The payment purposes.
const (
	PurposeTopUp      PaymentPurpose = "top_up"
	PurposeAutoReload PaymentPurpose = "auto_reload"
)

// Payment is a provider payment (a PaymentIntent) this server created.
type Payment struct {
	// ID is the provider's payment id; it is the ledger reference of the
	// credit, so one payment credits once.
	ID          string
	OrgID       int64
	Purpose     PaymentPurpose
	AmountCents int64
	// Status mirrors the provider's status ("succeeded", "requires_action",
	// "processing", "requires_payment_method", "canceled", "failed").
	Status    string
	ReloadID  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PaymentSucceeded is the provider status that credits the balance.
const PaymentSucceeded = "succeeded"

// RecordPayment stores (or updates the status of) a payment and, when its
// status is PaymentSucceeded, credits its amount as a top-up in the same
// transaction. credited is false when the payment had already been
// credited (by an earlier call or by the provider's event): nothing is
// credited twice.
func (s *BillingStore) RecordPayment(ctx context.Context, p Payment) (credited bool, err error) {
	now := s.nowMS()
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		credited, err = s.recordPaymentTx(ctx, tx, p, now)
		return err
	})
	return credited, err
}

// recordPaymentTx is RecordPayment inside tx. Like every billing write it
// takes the account row lock first, so billing transactions of one org
// serialize on one lock and cannot deadlock on the payment, reload and
// ledger rows they touch after it.
func (s *BillingStore) recordPaymentTx(ctx context.Context, tx *sql.Tx, p Payment, now int64) (bool, error) {
	if err := lockAccount(ctx, tx, p.OrgID); err != nil {
		return false, err
	}
	var reload any
	if p.ReloadID != "" {
		reload = p.ReloadID
	}
	// A payment never leaves succeeded: a late "processing" cannot undo it.
	if _, err := tx.ExecContext(ctx, `INSERT INTO billing_payments (id, org_id, purpose, amount_cents, status, reload_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
		ON CONFLICT (id) DO UPDATE SET status = CASE WHEN billing_payments.status = 'succeeded' THEN billing_payments.status ELSE excluded.status END,
			updated_at = excluded.updated_at`,
		p.ID, p.OrgID, p.Purpose, p.AmountCents, p.Status, reload, now); err != nil {
		return false, translate(err)
	}
	if p.Status != PaymentSucceeded {
		return false, nil
	}
	desc := "Top-up"
	if p.Purpose == PurposeAutoReload {
		desc = "Auto-reload"
	}
	_, applied, err := s.postTx(ctx, tx, p.OrgID, TxTopUp, p.AmountCents, desc, p.ID, now)
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE billing_accounts SET has_ever_topped_up = TRUE WHERE org_id = $1`, p.OrgID); err != nil {
		return false, translate(err)
	}
	if p.ReloadID != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE billing_reloads SET status = 'succeeded', payment_intent_id = $1, lease_until = NULL, updated_at = $2
			WHERE id = $3 AND status IN ('pending', 'processing')`, p.ID, now, p.ReloadID); err != nil {
			return false, translate(err)
		}
	}
	return applied, nil
}

// PaymentByID returns a payment this server created.
func (s *BillingStore) PaymentByID(ctx context.Context, id string) (Payment, error) {
	return scanPayment(s.db.QueryRowContext(ctx, paymentSelect+` WHERE id = $1`, id))
}

const paymentSelect = `SELECT id, org_id, purpose, amount_cents, status, COALESCE(reload_id, ''), created_at, updated_at FROM billing_payments`

func scanPayment(r interface{ Scan(...any) error }) (Payment, error) {
	var p Payment
	var c, u int64
	if err := r.Scan(&p.ID, &p.OrgID, &p.Purpose, &p.AmountCents, &p.Status, &p.ReloadID, &c, &u); err != nil {
		return Payment{}, translate(err)
	}
	p.CreatedAt, p.UpdatedAt = fromMS(c), fromMS(u)
	return p, nil
}

// ProviderEventKind is what a payment provider event means to billing.
type ProviderEventKind int

// The provider event kinds billing acts on.
const (
	// EventOther is recorded (so a replay is recognized) and ignored.
	EventOther ProviderEventKind = iota
	// EventPaymentSucceeded credits a payment once.
	EventPaymentSucceeded
	// EventPaymentFailed marks a payment (and its reload) failed.
	EventPaymentFailed
	// EventSetupSucceeded makes the saved card the default payment method.
	EventSetupSucceeded
)

// ProviderEvent is a verified payment provider event, reduced to what
// billing needs. The provider adapter fills it; storage knows no provider.
type ProviderEvent struct {
	ID   string
	Kind ProviderEventKind
	// Type is the provider's event type, kept for the record.
	Type string
	// PaymentID, AmountCents and Status describe a payment event.
	PaymentID   string
	AmountCents int64
	Status      string
	// OrgID is the organization the object's metadata names (0 if none):
	// it credits a payment whose row was never written (the process died
	// between the provider's answer and the insert).
	OrgID int64
	// Purpose and ReloadID come from the object's metadata.
	Purpose  PaymentPurpose
	ReloadID string
	// CustomerID and PaymentMethod describe a setup event.
	CustomerID    string
	PaymentMethod string
}

// ApplyProviderEvent applies ev once: the event id is recorded in the same
// transaction as its effect, so a replayed event changes nothing and
// applied is false. A payment-succeeded event for a payment this server
// does not know and whose metadata names no org is ErrUnknownPayment.
func (s *BillingStore) ApplyProviderEvent(ctx context.Context, ev ProviderEvent) (applied bool, err error) {
	now := s.nowMS()
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO billing_provider_events (id, type, received_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`, ev.ID, ev.Type, now)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		applied = true
		switch ev.Kind {
		case EventPaymentSucceeded, EventPaymentFailed:
			p, err := scanPayment(tx.QueryRowContext(ctx, paymentSelect+` WHERE id = $1`, ev.PaymentID))
			switch {
			case err == ErrNotFound && ev.OrgID != 0:
				p = Payment{ID: ev.PaymentID, OrgID: ev.OrgID, Purpose: ev.Purpose, AmountCents: ev.AmountCents, ReloadID: ev.ReloadID}
				if p.Purpose == "" {
					p.Purpose = PurposeTopUp
				}
			case err == ErrNotFound:
				return ErrUnknownPayment
			case err != nil:
				return err
			}
			if ev.Kind == EventPaymentSucceeded {
				p.Status = PaymentSucceeded
				_, err = s.recordPaymentTx(ctx, tx, p, now)
				return err
			}
			p.Status = ev.Status
			if p.Status == "" || p.Status == PaymentSucceeded {
				p.Status = "failed"
			}
			if _, err := s.recordPaymentTx(ctx, tx, p, now); err != nil {
				return err
			}
			if p.ReloadID == "" {
				return nil
			}
			// An off-session decline needs the user: reloads stay off until
			// the settings or the payment method change.
			if err := s.failReloadTx(ctx, tx, p.ReloadID, "card_declined", now); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE billing_accounts SET auto_reload_failed_at = $1 WHERE org_id = $2`, now, p.OrgID)
			return translate(err)
		case EventSetupSucceeded:
			var orgID int64
			err := tx.QueryRowContext(ctx, `SELECT org_id FROM billing_accounts WHERE provider_customer_id = $1`, ev.CustomerID).Scan(&orgID)
			if err = translate(err); err == ErrNotFound {
				orgID = ev.OrgID
			} else if err != nil {
				return err
			}
			if orgID == 0 || ev.PaymentMethod == "" {
				return nil
			}
			_, err = s.setDefaultPMTx(ctx, tx, orgID, ev.PaymentMethod, now)
			if err == ErrNotFound {
				return nil
			}
			return err
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}
