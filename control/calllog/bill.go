package calllog

import (
	"context"
	"errors"
	"time"

	"github.com/voiced/voiced/storage"
)

// bill charges ended call id once. A call that ended failed costs nothing:
// it was refused at admission, never answered (busy, no answer, rejected,
// dial failure) or ended by an error on our side; it is still marked
// billed, with 0 billable minutes, so the sweep does not revisit it.
//
// bill charges ended call id once (storage.BillCall makes it idempotent)
// and emits its completion event with it.
func (l *Log[C]) bill(ctx context.Context, id int64) error {
	c, err := l.st.Calls.CallByID(ctx, id)
	if err != nil {
		return err
	}
	if c.BilledAt != nil || c.Status == storage.CallInProgress || c.DurationSeconds == nil {
		return nil
	}
	var cost storage.CallCharge // a failed call costs nothing
	if c.Status != storage.CallFailed {
		voicemail := c.EndReason != nil && *c.EndReason == EndReasonVoicemail
		cost = CallCost(time.Duration(*c.DurationSeconds)*time.Second, l.product(c.Product), voicemail)
	}
	_, err = l.st.Calls.BillCall(ctx, id, cost)
	if errors.Is(err, storage.ErrCallInProgress) {
		return nil
	}
	return err
}

// BillUnbilled bills ended calls that were never billed (a process died
// between finishing and billing them) and returns how many it billed.
// RunBillSweep runs it periodically.
func (l *Log[C]) BillUnbilled(ctx context.Context) (int, error) {
	cs, err := l.st.Calls.UnbilledCalls(ctx, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cs {
		if err := l.bill(ctx, c.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// RunBillSweep runs BillUnbilled now and every interval until ctx ends.
func (l *Log[C]) RunBillSweep(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := l.BillUnbilled(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("unbilled call sweep", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
