package storage

import (
	"context"
	"database/sql"
	"time"
)

// TxKind is a ledger entry kind.
type TxKind string

// The ledger entry kinds.
const (
	TxTopUp      TxKind = "top_up"
	TxCallUsage  TxKind = "call_usage"
	TxNumberFee  TxKind = "number_fee"
	TxAdjustment TxKind = "adjustment"
)

// Transaction is one ledger row: a signed change to an org's balance.
type Transaction struct {
	ID                int64
	OrgID             int64
	Kind              TxKind
	AmountCents       int64
	BalanceAfterCents int64
	Description       string
	Reference         string
	CreatedAt         time.Time
}

// Balance returns orgID's balance in cents.
func (s *BillingStore) Balance(ctx context.Context, orgID int64) (int64, error) {
	var b int64
	err := s.db.QueryRowContext(ctx, `SELECT balance_cents FROM billing_accounts WHERE org_id = $1`, orgID).Scan(&b)
	return b, translate(err)
}

// Post applies a signed amount to orgID's balance and writes its ledger row
// in one transaction. A debit is one conditional UPDATE, so concurrent
// debits never drive the balance below zero (ErrInsufficientFunds). A
// non-empty reference is applied once per (org, kind): a repeat returns
// ErrConflict and changes nothing. A debit that leaves the balance below
// the auto-reload minimum queues a reload in the same transaction.
func (s *BillingStore) Post(ctx context.Context, orgID int64, kind TxKind, amount int64, desc, ref string) (Transaction, error) {
	var t Transaction
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var applied bool
		var err error
		t, applied, err = s.postTx(ctx, tx, orgID, kind, amount, desc, ref, s.nowMS())
		if err == nil && !applied {
			err = ErrConflict
		}
		return err
	})
	if err != nil {
		return Transaction{}, err
	}
	return t, nil
}

// postTx is Post inside tx. When ref is non-empty and (org, kind, ref) was
// already posted it returns that row with applied false and changes
// nothing: callers inside a larger transaction cannot afford the unique
// violation, which aborts a PostgreSQL transaction. The check is race-free
// because the account row is locked first.
func (s *BillingStore) postTx(ctx context.Context, tx *sql.Tx, orgID int64, kind TxKind, amount int64, desc, ref string, now int64) (Transaction, bool, error) {
	t := Transaction{OrgID: orgID, Kind: kind, AmountCents: amount, Description: desc, Reference: ref, CreatedAt: fromMS(now)}
	var refArg any
	if ref != "" {
		refArg = ref
		if err := lockAccount(ctx, tx, orgID); err != nil {
			return Transaction{}, false, err
		}
		prev, err := scanTransaction(tx.QueryRowContext(ctx, txSelect+` WHERE org_id = $1 AND kind = $2 AND reference = $3`, orgID, kind, ref))
		if err == nil {
			return prev, false, nil
		}
		if err != ErrNotFound {
			return Transaction{}, false, err
		}
	}
	// RETURNING the auto-reload settings saves a query on the common path:
	// only a debit that leaves the balance below an enabled minimum looks
	// further.
	var reloadOn bool
	var reloadMin int64
	err := tx.QueryRowContext(ctx, `UPDATE billing_accounts SET balance_cents = balance_cents + $1, updated_at = $2
		WHERE org_id = $3 AND balance_cents + $1 >= 0 RETURNING balance_cents, auto_reload_enabled, auto_reload_minimum_cents`,
		amount, now, orgID).Scan(&t.BalanceAfterCents, &reloadOn, &reloadMin)
	if err != nil {
		if err = translate(err); err == ErrNotFound {
			if _, e := s.balanceTx(ctx, tx, orgID); e == nil {
				return Transaction{}, false, ErrInsufficientFunds
			}
		}
		return Transaction{}, false, err
	}
	err = tx.QueryRowContext(ctx, `INSERT INTO billing_transactions (org_id, kind, amount_cents, balance_after_cents, description, reference, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, orgID, kind, amount, t.BalanceAfterCents, desc, refArg, now).Scan(&t.ID)
	if err != nil {
		return Transaction{}, false, translate(err)
	}
	if amount < 0 && reloadOn && t.BalanceAfterCents < reloadMin {
		if err := s.reloadCheckTx(ctx, tx, orgID, now); err != nil {
			return Transaction{}, false, err
		}
	}
	return t, true, nil
}

// lockAccount takes orgID's billing account row lock for the rest of tx
// (the portable SELECT ... FOR UPDATE, see lockMembership).
func lockAccount(ctx context.Context, tx *sql.Tx, orgID int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE billing_accounts SET balance_cents = balance_cents WHERE org_id = $1`, orgID)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

func (s *BillingStore) balanceTx(ctx context.Context, tx *sql.Tx, orgID int64) (int64, error) {
	var b int64
	err := tx.QueryRowContext(ctx, `SELECT balance_cents FROM billing_accounts WHERE org_id = $1`, orgID).Scan(&b)
	return b, translate(err)
}

const txSelect = `SELECT id, org_id, kind, amount_cents, balance_after_cents, description, COALESCE(reference, ''), created_at FROM billing_transactions`

func scanTransaction(r interface{ Scan(...any) error }) (Transaction, error) {
	var t Transaction
	var c int64
	if err := r.Scan(&t.ID, &t.OrgID, &t.Kind, &t.AmountCents, &t.BalanceAfterCents, &t.Description, &t.Reference, &c); err != nil {
		return Transaction{}, translate(err)
	}
	t.CreatedAt = fromMS(c)
	return t, nil
}

// Transactions lists orgID's ledger rows newest first.
func (s *BillingStore) Transactions(ctx context.Context, orgID int64, limit, offset int) ([]Transaction, error) {
	rows, err := s.db.QueryContext(ctx, txSelect+` WHERE org_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`, orgID, limit, offset)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []Transaction{}
	for rows.Next() {
		t, err := scanTransaction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, translate(rows.Err())
}
