package control

import (
	"errors"

	"github.com/voiced/voiced/control/billing"
	"github.com/voiced/voiced/control/payment"
)

// registerBillingRoutes wires the payment provider, if one is configured,
// into the billing routes.
func (s *Server) registerBillingRoutes() {
	var pay billing.Provider
	if st, err := payment.NewStripe(s.cfg.Payments); err == nil {
		pay = st
	} else if !errors.Is(err, payment.ErrNotConfigured) && s.log != nil {
		s.log.Error("payment provider not usable; top-ups answer 503", "err", err.Error())
	}
	s.mount(billing.Routes(s.log, s.store.Billing, s.store.Billing, pay))
}
