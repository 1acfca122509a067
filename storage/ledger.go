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
func (s *Store) Balance(ctx context.Context, orgID int64) (int64, error) {
	var b int64
	err := s.db.QueryRowContext(ctx, `SELECT balance_cents FROM billing_accounts WHERE org_id = $1`, orgID).Scan(&b)
	return b, translate(err)
}

// Post applies a signed amount to orgID's balance and writes its ledger row
// in one transaction. A debit is one conditional UPDATE, so concurrent
// debits never drive the balance below zero (ErrInsufficientFunds). A
// non-empty reference is applied once per (org, kind): a repeat returns
// ErrConflict and changes nothing.
func (s *Store) Post(ctx context.Context, orgID int64, kind TxKind, amount int64, desc, ref string) (Transaction, error) {
	t := Transaction{OrgID: orgID, Kind: kind, AmountCents: amount, Description: desc, Reference: ref, CreatedAt: fromMS(s.nowMS())}
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE billing_accounts SET balance_cents = balance_cents + $1, updated_at = $2
			WHERE org_id = $3 AND balance_cents + $1 >= 0 RETURNING balance_cents`, amount, ms(t.CreatedAt), orgID).Scan(&t.BalanceAfterCents)
		if err != nil {
			if err = translate(err); err == ErrNotFound {
				if _, e := s.balanceTx(ctx, tx, orgID); e == nil {
					return ErrInsufficientFunds
				}
			}
			return err
		}
		var refArg any
		if ref != "" {
			refArg = ref
		}
		return translate(tx.QueryRowContext(ctx, `INSERT INTO billing_transactions (org_id, kind, amount_cents, balance_after_cents, description, reference, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, orgID, kind, amount, t.BalanceAfterCents, desc, refArg, ms(t.CreatedAt)).Scan(&t.ID))
	})
	if err != nil {
		return Transaction{}, err
	}
	return t, nil
}

func (s *Store) balanceTx(ctx context.Context, tx *sql.Tx, orgID int64) (int64, error) {
	var b int64
	err := tx.QueryRowContext(ctx, `SELECT balance_cents FROM billing_accounts WHERE org_id = $1`, orgID).Scan(&b)
	return b, translate(err)
}

// Transactions lists orgID's ledger rows newest first.
func (s *Store) Transactions(ctx context.Context, orgID int64, limit, offset int) ([]Transaction, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, org_id, kind, amount_cents, balance_after_cents, description, COALESCE(reference, ''), created_at
		FROM billing_transactions WHERE org_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`, orgID, limit, offset)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []Transaction{}
	for rows.Next() {
		var t Transaction
		var c int64
		if err := rows.Scan(&t.ID, &t.OrgID, &t.Kind, &t.AmountCents, &t.BalanceAfterCents, &t.Description, &t.Reference, &c); err != nil {
			return nil, translate(err)
		}
		t.CreatedAt = fromMS(c)
		out = append(out, t)
	}
	return out, translate(rows.Err())
}
