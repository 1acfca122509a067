// Package onboarding serves the onboarding checklist (/v1/onboarding):
// four steps (agent, billing, phone, call) derived from what the
// organization has done, which never revert, and whether the checklist is
// dismissed.
package onboarding

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Store is what the onboarding routes need from storage.
type Store interface {
	Onboarding(ctx context.Context, orgID int64) (storage.Onboarding, error)
	SetOnboardingDismissed(ctx context.Context, orgID int64, dismissed bool) error
	SkipAgentTalk(ctx context.Context, orgID int64) error
}

type handlers struct {
	store Store
}

// Routes returns the onboarding routes.
func Routes(store Store) []api.Route {
	h := &handlers{store: store}
	return []api.Route{
		{Method: "GET", Path: "/v1/onboarding", Summary: "Onboarding checklist, derived from what the org has done; steps never revert", Tag: "onboarding", Auth: api.AuthOrg, ResSchema: "Onboarding", Handler: h.getOnboarding},
		{Method: "POST", Path: "/v1/onboarding/dismiss", Summary: "Hide the checklist (steps unchanged)", Tag: "onboarding", Auth: api.AuthOrg, ResSchema: "Onboarding", Handler: h.dismissOnboarding(true)},
		{Method: "POST", Path: "/v1/onboarding/undismiss", Summary: "Show the checklist again (steps unchanged)", Tag: "onboarding", Auth: api.AuthOrg, ResSchema: "Onboarding", Handler: h.dismissOnboarding(false)},
		{Method: "POST", Path: "/v1/onboarding/agent-talk/skip", Summary: "Complete the agent step without talking to the agent; the org must have an agent", Tag: "onboarding", Auth: api.AuthOrg, ResSchema: "Onboarding", Errors: []int{400}, Handler: h.skipAgentTalk},
	}
}

type stepView struct {
	Completed   bool    `json:"completed"`
	CompletedAt *string `json:"completed_at"`
}

func step(t *time.Time) stepView { return stepView{Completed: t != nil, CompletedAt: api.TSPtr(t)} }

func (h *handlers) onboardingView(c fiber.Ctx, orgID int64) error {
	o, err := h.store.Onboarding(c.Context(), orgID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{
		"steps":        fiber.Map{"agent": step(o.Agent), "billing": step(o.Billing), "phone": step(o.Phone), "call": step(o.Call)},
		"all_complete": o.Agent != nil && o.Billing != nil && o.Phone != nil && o.Call != nil,
		"dismissed":    o.Dismissed != nil,
		"dismissed_at": api.TSPtr(o.Dismissed),
	})
}

func (h *handlers) getOnboarding(c fiber.Ctx, p *storage.Principal) error {
	return h.onboardingView(c, p.OrgID)
}

func (h *handlers) dismissOnboarding(dismissed bool) func(fiber.Ctx, *storage.Principal) error {
	return func(c fiber.Ctx, p *storage.Principal) error {
		if err := h.store.SetOnboardingDismissed(c.Context(), p.OrgID, dismissed); err != nil {
			return err
		}
		return h.onboardingView(c, p.OrgID)
	}
}

func (h *handlers) skipAgentTalk(c fiber.Ctx, p *storage.Principal) error {
	err := h.store.SkipAgentTalk(c.Context(), p.OrgID)
	if errors.Is(err, storage.ErrNoAgent) {
		return api.Err(http.StatusBadRequest, "Create an agent first; the agent step needs one.")
	}
	if err != nil {
		return err
	}
	return h.onboardingView(c, p.OrgID)
}
