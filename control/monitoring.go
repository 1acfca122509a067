package control

import (
	"fmt"

	"github.com/voiced/voiced/control/monitoring"
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
