package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ErrCallInProgress means a call cannot be billed before it has ended.
var ErrCallInProgress = errors.New("storage: call is still in progress")

// CallCharge is what a finished call costs (computed by the control plane
// from its duration and product price).
type CallCharge struct {
	BillableMinutes float64
	TotalCents      int64
}

// CallBill is the outcome of BillCall.
type CallBill struct {
	Call Call
	// Applied is false when the call had already been billed: nothing
	// changed.
	Applied bool
	// ChargedCents is what the ledger entry took; less than TotalCents
	// only when the balance could not cover the call.
	ChargedCents int64
}

// completionEvent is the webhook event type of a finished call.
func completionEvent(direction string) string {
	switch direction {
	case DirectionWeb:
		return "web.complete"
	case DirectionTest:
		return "test-call.completed"
	}
	return "telephony.complete"
}

// BillCall bills ended call id once. In one transaction it debits the
// usage entry (reference "call:<id>"), sets billable_minutes,
// billing_total_cents and billed_at, and emits the call's completion
// webhook event (telephony.complete, web.complete or test-call.completed)
// to the outbox, and queues the call for grading when it has an agent.
// A call already billed changes nothing, however often its
// end is reported.
//
// The balance never goes below zero: admission caps a call at what the
// balance pays for, but calls running at the same time share one balance,
// and when the remainder cannot cover this one the entry takes what is
// left and its description says how much went uncollected.
func (s *CallStore) BillCall(ctx context.Context, id int64, ch CallCharge) (CallBill, error) {
	var out CallBill
	now := s.nowMS()
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET id = id WHERE id = $1`, id)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		c, err := scanCall(tx.QueryRowContext(ctx, callSelect+` WHERE id = $1`, id))
		if err != nil {
			return err
		}
		out.Call = c
		if c.BilledAt != nil {
			return nil
		}
		if c.Status == CallInProgress {
			return ErrCallInProgress
		}
		if err := lockAccount(ctx, tx, c.OrgID); err != nil {
			return err
		}
		charge := ch.TotalCents
		if charge > 0 {
			bal, err := (&BillingStore{s.base}).balanceTx(ctx, tx, c.OrgID)
			if err != nil {
				return err
			}
			desc := fmt.Sprintf("Call %d (%s min)", id, strconv.FormatFloat(ch.BillableMinutes, 'f', -1, 64))
			if bal < charge {
				desc += fmt.Sprintf(", %d cents uncollected", charge-bal)
				charge = bal
			}
			if charge > 0 {
				if _, _, err := (&BillingStore{s.base}).postTx(ctx, tx, c.OrgID, TxCallUsage, -charge, desc, "call:"+strconv.FormatInt(id, 10), now); err != nil {
					return err
				}
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE calls SET billable_minutes = $1, billing_total_cents = $2, billed_at = $3, updated_at = $3 WHERE id = $4`,
			ch.BillableMinutes, ch.TotalCents, now, id); err != nil {
			return translate(err)
		}
		minutes, total, billed := ch.BillableMinutes, ch.TotalCents, fromMS(now)
		c.BillableMinutes, c.BillingTotalCents, c.BilledAt, c.UpdatedAt = &minutes, &total, &billed, billed
		data, err := json.Marshal(map[string]any{
			"call_id": c.ID, "agent_id": c.AgentID, "direction": c.Direction, "from_number": c.FromNumber, "to_number": c.ToNumber,
			"status": c.Status, "end_reason": c.EndReason, "duration_seconds": c.DurationSeconds,
			"start_time": c.StartTime.UTC().Format("2006-01-02T15:04:05.000Z"), "is_simulation": c.IsSimulation,
			"billable_minutes": minutes, "billing_total_cents": total,
		})
		if err != nil {
			return err
		}
		if _, err := s.emitTx(ctx, tx, c.OrgID, completionEvent(c.Direction), data, now); err != nil {
			return err
		}
		// Calls of an agent are queued for grading with their bill; the
		// grading worker skips those whose agent has grading off.
		if c.AgentID != nil {
			if err := enqueueGradeTx(ctx, tx, c.OrgID, id, now); err != nil {
				return err
			}
		}
		out = CallBill{Call: c, Applied: true, ChargedCents: charge}
		return nil
	})
	return out, err
}

// incomingEventTx emits the incoming webhook event of a call admitted in
// tx: telephony.incoming for inbound calls, web.incoming for web calls.
// Refused calls (created failed) and other directions emit nothing.
func (s *CallStore) incomingEventTx(ctx context.Context, tx *sql.Tx, c Call, now int64) error {
	typ := ""
	switch {
	case c.Status != CallInProgress:
	case c.Direction == DirectionInbound:
		typ = "telephony.incoming"
	case c.Direction == DirectionWeb:
		typ = "web.incoming"
	}
	if typ == "" {
		return nil
	}
	data, err := json.Marshal(map[string]any{
		"call_id": c.ID, "agent_id": c.AgentID, "direction": c.Direction, "from_number": c.FromNumber, "to_number": c.ToNumber,
		"start_time": c.StartTime.UTC().Format("2006-01-02T15:04:05.000Z"), "is_simulation": c.IsSimulation,
	})
	if err != nil {
		return err
	}
	_, err = s.emitTx(ctx, tx, c.OrgID, typ, data, now)
	return err
}

// UnbilledCalls lists ended calls that were never billed, oldest first: a
// process that died between finishing a call and billing it leaves one,
// and a sweep bills it.
func (s *CallStore) UnbilledCalls(ctx context.Context, limit int) ([]Call, error) {
	return scanAll(ctx, s.db.DB, func(r interface{ Scan(...any) error }) (Call, error) { return scanCall(r) },
		callSelect+` WHERE billed_at IS NULL AND status <> 'in_progress' AND end_time IS NOT NULL AND duration_seconds > 0 ORDER BY id LIMIT $1`, limit)
}
