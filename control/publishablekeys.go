package control

import (
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/control/widget"
)

// registerPublishableKeyRoutes adds the publishable key routes (spec 4.4),
// the widget's signalling and script, and mic sessions.
func (s *Server) registerPublishableKeyRoutes() {
	s.mount(widget.KeyRoutes(s.store.PublishableKeys, s.store.PublishableKeys))
	ex := webhook.NewExchanger(widget.HookStore{Legacy: s.store.Webhooks}, s.cfg.Webhooks.AllowLoopback, nil, s.log)
	s.mount(widget.Routes(s.log, s.store.PublishableKeys, s.limiter, ex, widgetCalls{s}))
	s.registerMicSessionRoutes()
}
