package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// NumberFeeRun is the outcome of ChargeNumberFees.
type NumberFeeRun struct {
	// Charged counts numbers whose fee for the month was taken now.
	Charged int
	// Due counts numbers whose fee the balance could not cover yet.
	Due int
}

// ChargeNumberFees takes the monthly fee of every active demo number for
// the calendar month (UTC) that contains at. Each fee is one ledger entry
// of kind number_fee with reference "number:<id>:<YYYY-MM>", so a number is
// charged once a month however often (and on however many replicas) the
// sweep runs. A fee is taken in full or not at all: when the balance cannot
// cover it the fee stays due and a later sweep in the same month takes it
// once the balance allows. Numbers on the org's own VoIP trunk (source
// voip) carry no fee; released and failed numbers are not charged.
func (s *BillingStore) ChargeNumberFees(ctx context.Context, at time.Time, feeCents int64) (NumberFeeRun, error) {
	var run NumberFeeRun
	if feeCents <= 0 {
		return run, nil
	}
	month := at.UTC().Format("2006-01")
	type due struct {
		id, org int64
		number  string
	}
	rows, err := s.db.QueryContext(ctx, `SELECT p.id, p.org_id, p.number FROM phone_numbers p
		WHERE p.source = 'demo' AND p.status = 'active'
		AND NOT EXISTS (SELECT 1 FROM billing_transactions t
			WHERE t.org_id = p.org_id AND t.kind = 'number_fee' AND t.reference = 'number:' || p.id || ':' || $1)
		ORDER BY p.id`, month)
	if err != nil {
		return run, translate(err)
	}
	var list []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.org, &d.number); err != nil {
			rows.Close()
			return run, translate(err)
		}
		list = append(list, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return run, translate(err)
	}
	for _, d := range list {
		err := s.db.tx(ctx, func(tx *sql.Tx) error {
			if err := lockAccount(ctx, tx, d.org); err != nil {
				return err
			}
			bal, err := s.balanceTx(ctx, tx, d.org)
			if err != nil {
				return err
			}
			if bal < feeCents {
				return ErrInsufficientFunds
			}
			_, applied, err := s.postTx(ctx, tx, d.org, TxNumberFee, -feeCents,
				fmt.Sprintf("Number %s, %s", d.number, month), fmt.Sprintf("number:%d:%s", d.id, month), s.nowMS())
			if err == nil && applied {
				run.Charged++
			}
			return err
		})
		switch {
		case errors.Is(err, ErrInsufficientFunds):
			run.Due++
		case err != nil:
			return run, err
		}
	}
	return run, nil
}
