package control

import (
	"github.com/voiced/voiced/control/onboarding"
	"github.com/voiced/voiced/control/voices"
)

// registerResourceRoutes adds the routes of agents, voices, numbers, VoIP
// connections, calls and onboarding.
func (s *Server) registerResourceRoutes() {
	s.mount(s.agentRoutes())
	s.mount(voices.Routes(s.res.catalog))
	s.mount(s.numbers.Routes())
	s.registerCallRoutes()
	s.mount(onboarding.Routes(s.store.Onboarding))
}
