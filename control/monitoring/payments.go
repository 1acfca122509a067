package monitoring

import (
	"context"
	"errors"

	"github.com/voiced/voiced/control/billing"
	"github.com/voiced/voiced/control/payment"
)

// ReportPayments is payment provider p with each request's outcome
// reported to w, the heartbeat's window (ProviderPayments).
func ReportPayments(p billing.Provider, w *Window) billing.Provider { return reportedPayments{p, w} }

// reportedPayments is the payment provider with each request's outcome
// reported to the heartbeat's window. Only the provider's own failures
// count against it (unreachable, or an error on its side); a declined
// card, a 3-D Secure step or a refused request is the customer's outcome
// and counts as the provider working.
type reportedPayments struct {
	billing.Provider
	w *Window
}

func (p reportedPayments) report(err error) error {
	var pe *payment.Error
	switch {
	case err == nil:
		p.w.Record(ProviderPayments, nil)
	case errors.As(err, &pe) && (pe.Code == payment.CodeProviderUnavailable || pe.Code == payment.CodeProviderError):
		p.w.Record(ProviderPayments, err)
	case errors.As(err, &pe):
		p.w.Record(ProviderPayments, nil) // the customer's outcome
	}
	// Anything else (a cancelled request) says nothing of the provider.
	return err
}

func (p reportedPayments) Customer(ctx context.Context, orgID int64, name string) (string, error) {
	id, err := p.Provider.Customer(ctx, orgID, name)
	return id, p.report(err)
}

func (p reportedPayments) Charge(ctx context.Context, c payment.Charge) (payment.Intent, error) {
	in, err := p.Provider.Charge(ctx, c)
	return in, p.report(err)
}

func (p reportedPayments) SetupIntent(ctx context.Context, orgID int64, customer string) (payment.Intent, error) {
	in, err := p.Provider.SetupIntent(ctx, orgID, customer)
	return in, p.report(err)
}

func (p reportedPayments) AttachMethod(ctx context.Context, customer, pm string) error {
	return p.report(p.Provider.AttachMethod(ctx, customer, pm))
}
