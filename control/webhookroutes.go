package control

import "github.com/voiced/voiced/control/webhook"

func (s *Server) registerWebhookRoutes() {
	// webhook.New fails only without a store, and New has checked it.
	first, _ := webhook.New(s.cfg.Webhooks, s.log, s.store)
	s.mount(webhook.EndpointRoutes(s.store.Webhooks, s.store, first))
}
