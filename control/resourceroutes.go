package control

import "github.com/voiced/voiced/control/onboarding"

// registerResourceRoutes adds the routes of agents, voices, numbers, VoIP
// connections, calls and onboarding.
func (s *Server) registerResourceRoutes() {
	s.registerAgentRoutes()
	s.add(route{method: "GET", path: "/v1/voices", summary: "Voice catalog: query languages (comma list; voices must speak all), category, gender; returns {voices, languages, surcharges}", tag: "voices", auth: authOrg, resSchema: "VoiceCatalog", errors: []int{400}, handler: s.listVoices})
	s.mount(s.numbers.Routes())
	s.registerCallRoutes()
	s.mount(onboarding.Routes(s.store))
}
