package control

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/voiced/voiced/storage"
)

// NoLimit is the MaxDuration of a call whose product costs nothing.
const NoLimit = time.Duration(math.MaxInt64)

// EndReasonVoicemail is the end_reason of a call that went straight to
// voicemail; it bills a flat VoicemailCents (spec sections 2.9 and 8).
const EndReasonVoicemail = "voicemail"

// VoicemailCents is the flat price of a straight-to-voicemail call.
const VoicemailCents = 1

// CallCost is what a call of duration d costs at product p: its billable
// minutes (d to the nearest quarter minute, at least 0.25; see
// BillableMinutes) times the per-minute price, rounded up to a whole cent
// (Product.PriceCents). A straight-to-voicemail call costs a flat cent
// whatever its length.
func CallCost(d time.Duration, p Product, voicemail bool) storage.CallCharge {
	m := BillableMinutes(d)
	if voicemail {
		return storage.CallCharge{BillableMinutes: m, TotalCents: VoicemailCents}
	}
	return storage.CallCharge{BillableMinutes: m, TotalCents: p.PriceCents(m)}
}

// MaxCallDuration is the longest call balance pays for at p, measured the
// way calls are billed: durations are whole seconds, and s seconds bill
// round(s/15) quarter minutes, so q affordable quarters allow up to
// 15q+7 seconds. Zero means not even the 0.25-minute minimum is covered;
// a free product has NoLimit.
func MaxCallDuration(balanceCents int64, p Product) time.Duration {
	if p.CentsPerMinute <= 0 {
		return NoLimit
	}
	if balanceCents <= 0 {
		return 0
	}
	// ceil(q*price/4) <= balance  <=>  q*price <= 4*balance.
	q := 4 * balanceCents / p.CentsPerMinute
	if q == 0 {
		return 0
	}
	return time.Duration(15*q+7) * time.Second
}

// product returns the price list entry of name; a product dropped from
// the configuration since the call started bills at the default product.
func (r *resources) product(name *string) Product {
	if name != nil {
		if p, ok := r.products[*name]; ok {
			return p
		}
	}
	return r.products[r.cfg.DefaultProduct]
}

// bill charges ended call id once. A call that ended failed costs nothing:
// it was refused at admission, never answered (busy, no answer, rejected,
// dial failure) or ended by an error on our side; it is still marked
// billed, with 0 billable minutes, so the sweep does not revisit it.
//
// bill charges ended call id once (storage.BillCall makes it idempotent)
// and emits its completion event with it.
func (l *CallLog) bill(ctx context.Context, id int64) error {
	c, err := l.s.store.Calls.CallByID(ctx, id)
	if err != nil {
		return err
	}
	if c.BilledAt != nil || c.Status == storage.CallInProgress || c.DurationSeconds == nil {
		return nil
	}
	var cost storage.CallCharge // a failed call costs nothing
	if c.Status != storage.CallFailed {
		voicemail := c.EndReason != nil && *c.EndReason == EndReasonVoicemail
		cost = CallCost(time.Duration(*c.DurationSeconds)*time.Second, l.s.res.product(c.Product), voicemail)
	}
	_, err = l.s.store.Calls.BillCall(ctx, id, cost)
	if errors.Is(err, storage.ErrCallInProgress) {
		return nil
	}
	return err
}

// BillUnbilled bills ended calls that were never billed (a process died
// between finishing and billing them) and returns how many it billed.
// RunBillSweep runs it periodically.
func (l *CallLog) BillUnbilled(ctx context.Context) (int, error) {
	cs, err := l.s.store.Calls.UnbilledCalls(ctx, 100)
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
func (l *CallLog) RunBillSweep(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := l.BillUnbilled(ctx); err != nil && ctx.Err() == nil {
			l.s.log.Warn("unbilled call sweep", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
