package control

import (
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

func (s *Server) registerOnboardingRoutes() {
	s.add(route{method: "GET", path: "/v1/onboarding", summary: "Onboarding checklist, derived from what the org has done; steps never revert", tag: "onboarding", auth: authOrg, resSchema: "Onboarding", handler: s.getOnboarding})
	s.add(route{method: "POST", path: "/v1/onboarding/dismiss", summary: "Hide the checklist (steps unchanged)", tag: "onboarding", auth: authOrg, resSchema: "Onboarding", handler: s.dismissOnboarding(true)})
	s.add(route{method: "POST", path: "/v1/onboarding/undismiss", summary: "Show the checklist again (steps unchanged)", tag: "onboarding", auth: authOrg, resSchema: "Onboarding", handler: s.dismissOnboarding(false)})
	s.add(route{method: "POST", path: "/v1/onboarding/agent-talk/skip", summary: "Complete the agent step without talking to the agent; the org must have an agent", tag: "onboarding", auth: authOrg, resSchema: "Onboarding", errors: []int{400}, handler: s.skipAgentTalk})
}

type stepView struct {
	Completed   bool    `json:"completed"`
	CompletedAt *string `json:"completed_at"`
}

func step(t *time.Time) stepView { return stepView{Completed: t != nil, CompletedAt: tsPtr(t)} }

func (s *Server) onboardingView(c fiber.Ctx, orgID int64) error {
	o, err := s.store.Onboarding(c.Context(), orgID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{
		"steps":        fiber.Map{"agent": step(o.Agent), "billing": step(o.Billing), "phone": step(o.Phone), "call": step(o.Call)},
		"all_complete": o.Agent != nil && o.Billing != nil && o.Phone != nil && o.Call != nil,
		"dismissed":    o.Dismissed != nil,
		"dismissed_at": tsPtr(o.Dismissed),
	})
}

func (s *Server) getOnboarding(c fiber.Ctx, p *storage.Principal) error {
	return s.onboardingView(c, p.OrgID)
}

func (s *Server) dismissOnboarding(dismissed bool) func(fiber.Ctx, *storage.Principal) error {
	return func(c fiber.Ctx, p *storage.Principal) error {
		if err := s.store.SetOnboardingDismissed(c.Context(), p.OrgID, dismissed); err != nil {
			return err
		}
		return s.onboardingView(c, p.OrgID)
	}
}

func (s *Server) skipAgentTalk(c fiber.Ctx, p *storage.Principal) error {
	err := s.store.SkipAgentTalk(c.Context(), p.OrgID)
	if errors.Is(err, storage.ErrNoAgent) {
		return apiErr(http.StatusBadRequest, "Create an agent first; the agent step needs one.")
	}
	if err != nil {
		return err
	}
	return s.onboardingView(c, p.OrgID)
}
