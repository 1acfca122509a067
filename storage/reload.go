package storage

import (
	"context"
	"database/sql"
	"time"
)

// ReloadStatus is where an auto-reload attempt stands.
type ReloadStatus string

// The reload states. Pending and processing are "in flight": at most one
// per org, enforced by a unique index.
const (
	ReloadPending    ReloadStatus = "pending"
	ReloadProcessing ReloadStatus = "processing"
	ReloadSucceeded  ReloadStatus = "succeeded"
	ReloadFailed     ReloadStatus = "failed"
)

// Reload is one auto-reload attempt. Its ID is the provider idempotency
// key: retrying the same attempt after a transient error can never charge
// twice.
type Reload struct {
	ID              string
	OrgID           int64
	AmountCents     int64
	Status          ReloadStatus
	Tries           int
	NextTryAt       time.Time
	PaymentIntentID string
	ErrorCode       string
	CreatedAt       time.Time
	UpdatedAt       time.Time

	// Filled by ClaimReloads: what the worker charges.
	CustomerID    string
	PaymentMethod string
	// LeaseToken identifies the claim; FinishReload needs it.
	LeaseToken string
}

// monthStart is the first millisecond of the UTC calendar month of ms.
func monthStart(at int64) int64 {
	t := fromMS(at)
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).UnixMilli()
}

// reloadCheckTx queues an auto-reload for orgID when it is due: enabled,
// balance below the minimum, a default payment method, no unresolved
// failure, no reload in flight, and the calendar-month cap (UTC) not
// exceeded by in-flight and succeeded reloads plus this one. Callers hold
// the account row lock (every caller has just updated the row), so the
// check and the insert cannot interleave with another debit of the same
// org; the unique index on in-flight reloads backs that up.
func (s *BillingStore) reloadCheckTx(ctx context.Context, tx *sql.Tx, orgID int64, now int64) error {
	a, err := scanAccount(tx.QueryRowContext(ctx, accountSelect+` WHERE org_id = $1`, orgID))
	if err != nil {
		return err
	}
	if !a.AutoReloadEnabled || a.AutoReloadAmountCents <= 0 || a.BalanceCents >= a.AutoReloadMinimumCents ||
		a.DefaultPaymentMethod == "" || a.AutoReloadFailedAt != nil {
		return nil
	}
	if a.AutoReloadMonthlyLimitCents != nil {
		var used int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(amount_cents), 0) FROM billing_reloads
			WHERE org_id = $1 AND status IN ('pending', 'processing', 'succeeded') AND created_at >= $2`, orgID, monthStart(now)).Scan(&used); err != nil {
			return translate(err)
		}
		if used+a.AutoReloadAmountCents > *a.AutoReloadMonthlyLimitCents {
			return nil
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO billing_reloads (id, org_id, amount_cents, status, next_try_at, created_at, updated_at)
		VALUES ($1, $2, $3, 'pending', $4, $4, $4) ON CONFLICT DO NOTHING`, NewUUID(), orgID, a.AutoReloadAmountCents, now)
	return translate(err)
}

const reloadSelect = `SELECT r.id, r.org_id, r.amount_cents, r.status, r.tries, r.next_try_at, COALESCE(r.payment_intent_id, ''), r.error_code,
	r.created_at, r.updated_at, COALESCE(a.provider_customer_id, ''), COALESCE(a.default_payment_method, ''), COALESCE(r.lease_token, '')
	FROM billing_reloads r JOIN billing_accounts a ON a.org_id = r.org_id`

func scanReload(r interface{ Scan(...any) error }) (Reload, error) {
	var x Reload
	var next, c, u int64
	if err := r.Scan(&x.ID, &x.OrgID, &x.AmountCents, &x.Status, &x.Tries, &next, &x.PaymentIntentID, &x.ErrorCode, &c, &u,
		&x.CustomerID, &x.PaymentMethod, &x.LeaseToken); err != nil {
		return Reload{}, translate(err)
	}
	x.NextTryAt, x.CreatedAt, x.UpdatedAt = fromMS(next), fromMS(c), fromMS(u)
	return x, nil
}

// Reloads lists orgID's reload attempts, newest first.
func (s *BillingStore) Reloads(ctx context.Context, orgID int64) ([]Reload, error) {
	return scanAll(ctx, s.db.DB, scanReload, reloadSelect+` WHERE r.org_id = $1 ORDER BY r.created_at DESC, r.id DESC`, orgID)
}

// ClaimReloads leases up to limit pending reloads that are due at now for
// lease; a worker that dies lets the lease run out and another one takes
// the reload (with the same idempotency key).
func (s *BillingStore) ClaimReloads(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Reload, error) {
	tok := NewUUID()
	n := ms(now)
	_, err := s.db.ExecContext(ctx, `UPDATE billing_reloads SET lease_until = $1, lease_token = $2, updated_at = $3
		WHERE id IN (SELECT id FROM billing_reloads WHERE status = 'pending' AND next_try_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
			ORDER BY next_try_at LIMIT $4)
		AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $3)`, ms(now.Add(lease)), tok, n, limit)
	if err != nil {
		return nil, translate(err)
	}
	return scanAll(ctx, s.db.DB, scanReload, reloadSelect+` WHERE r.lease_token = $1 AND r.status = 'pending'`, tok)
}

// ReloadOutcome is what one charge attempt of a reload came to.
type ReloadOutcome struct {
	// Status is ReloadSucceeded (credit now), ReloadProcessing (the
	// provider's event decides), ReloadFailed (give up), or ReloadPending
	// (transient error: try again at RetryAt).
	Status          ReloadStatus
	PaymentIntentID string
	// ErrorCode is the payment error code of a failure.
	ErrorCode string
	RetryAt   time.Time
	// UserAction says the failure needs the user (a decline, 3-D Secure):
	// reloads stay off until the settings or payment method change.
	UserAction bool
}

// FinishReload records the outcome of the claimed reload r. A succeeded
// reload credits its payment once (the provider event may race it; the
// ledger reference settles who wins). A finish whose lease was lost to
// another worker changes nothing.
func (s *BillingStore) FinishReload(ctx context.Context, r Reload, o ReloadOutcome) error {
	now := s.nowMS()
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockAccount(ctx, tx, r.OrgID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE billing_reloads SET tries = tries + 1, lease_until = NULL, updated_at = $1
			WHERE id = $2 AND lease_token = $3 AND status = 'pending'`, now, r.ID, r.LeaseToken)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		switch o.Status {
		case ReloadSucceeded, ReloadProcessing:
			if o.Status == ReloadProcessing {
				if _, err := tx.ExecContext(ctx, `UPDATE billing_reloads SET status = 'processing', payment_intent_id = $1 WHERE id = $2`, o.PaymentIntentID, r.ID); err != nil {
					return translate(err)
				}
			}
			status := "processing"
			if o.Status == ReloadSucceeded {
				status = PaymentSucceeded
			}
			_, err := s.recordPaymentTx(ctx, tx, Payment{ID: o.PaymentIntentID, OrgID: r.OrgID, Purpose: PurposeAutoReload,
				AmountCents: r.AmountCents, Status: status, ReloadID: r.ID}, now)
			return err
		case ReloadPending:
			_, err := tx.ExecContext(ctx, `UPDATE billing_reloads SET next_try_at = $1, error_code = $2 WHERE id = $3`, ms(o.RetryAt), o.ErrorCode, r.ID)
			return translate(err)
		default:
			if o.PaymentIntentID != "" {
				if _, err := tx.ExecContext(ctx, `UPDATE billing_reloads SET payment_intent_id = $1 WHERE id = $2`, o.PaymentIntentID, r.ID); err != nil {
					return translate(err)
				}
			}
			if err := s.failReloadTx(ctx, tx, r.ID, o.ErrorCode, now); err != nil {
				return err
			}
			if !o.UserAction {
				return nil
			}
			_, err := tx.ExecContext(ctx, `UPDATE billing_accounts SET auto_reload_failed_at = $1 WHERE org_id = $2`, now, r.OrgID)
			return translate(err)
		}
	})
}

// failReloadTx marks an in-flight reload failed.
func (s *BillingStore) failReloadTx(ctx context.Context, tx *sql.Tx, id, code string, now int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE billing_reloads SET status = 'failed', error_code = $1, lease_until = NULL, updated_at = $2
		WHERE id = $3 AND status IN ('pending', 'processing')`, code, now, id)
	return translate(err)
}

// scanAll runs a query and scans every row with scan.
func scanAll[T any](ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, scan func(interface{ Scan(...any) error }) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, translate(rows.Err())
}
