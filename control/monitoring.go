package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/voiced/voiced/control/billing"
	"github.com/voiced/voiced/control/monitoring"
	"github.com/voiced/voiced/control/payment"
)

// initMonitoring builds the status heartbeat and the monitoring receivers.
// The limiter doubles as the node registry when it is one (coord.Local and
// rediscoord both are): its Nodes call is the coordination store's ping.
func (s *Server) initMonitoring() error {
	s.providers = monitoring.NewWindow(nil)
	reg, _ := s.limiter.(monitoring.Registry)
	m, err := monitoring.New(monitoring.Config{Token: s.cfg.MonitoringToken, PublicURL: s.cfg.PublicURL}, s.log, monitoring.Deps{
		Store: s.store.Incidents, Acks: s.store.Incidents, DB: s.store.DB(), Nodes: reg, Providers: s.providers.Health,
	})
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	s.monitor = m
	return nil
}

// ProviderErrors is the window the AI and payment provider callers feed
// (Record(kind, err) once per request) so that the status heartbeat sees
// their error rates.
func (s *Server) ProviderErrors() *monitoring.Window { return s.providers }

// reportedPayments is the payment provider with each request's outcome
// reported to the heartbeat's window. Only the provider's own failures
// count against it (unreachable, or an error on its side); a declined
// card, a 3-D Secure step or a refused request is the customer's outcome
// and counts as the provider working.
type reportedPayments struct {
	billing.Provider
	w *monitoring.Window
}

func (p reportedPayments) report(err error) error {
	var pe *payment.Error
	switch {
	case err == nil:
		p.w.Record(monitoring.ProviderPayments, nil)
	case errors.As(err, &pe) && (pe.Code == payment.CodeProviderUnavailable || pe.Code == payment.CodeProviderError):
		p.w.Record(monitoring.ProviderPayments, err)
	case errors.As(err, &pe):
		p.w.Record(monitoring.ProviderPayments, nil) // the customer's outcome
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
