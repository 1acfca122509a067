package webhook

import (
	"context"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// LegacyRouteStore is what the /v1/webhook routes need from storage.
type LegacyRouteStore interface {
	LegacyStore
	SetWebhook(ctx context.Context, orgID int64, url string, rotate bool) (storage.Webhook, error)
}

type legacyHandlers struct {
	store LegacyRouteStore
}

// LegacyRoutes returns the /v1/webhook routes: the organization's single
// legacy URL and its secret.
func LegacyRoutes(store LegacyRouteStore) []api.Route {
	h := &legacyHandlers{store: store}
	return []api.Route{
		{Method: "GET", Path: "/v1/webhook", Summary: "Get the legacy webhook (admin+)", Tag: "webhook", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResSchema: "Webhook", Errors: []int{403, 404}, Handler: h.getWebhook},
		{Method: "PUT", Path: "/v1/webhook", Summary: "Set the legacy webhook URL and rotate its secret (admin+)", Tag: "webhook", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "WebhookInput", ResSchema: "Webhook", Errors: []int{400, 403}, Handler: h.putWebhook},
		{Method: "PATCH", Path: "/v1/webhook", Summary: "Change the legacy webhook URL, keeping its secret (admin+)", Tag: "webhook", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "WebhookInput", ResSchema: "Webhook", Errors: []int{400, 403}, Handler: h.patchWebhook},
	}
}

type webhookInput struct {
	URL *string `json:"url"`
}

func viewWebhook(w storage.Webhook) webhookView {
	return webhookView{URL: w.URL, Secret: w.Secret, CreatedAt: api.TS(w.CreatedAt), UpdatedAt: api.TS(w.UpdatedAt)}
}

func (h *legacyHandlers) getWebhook(c fiber.Ctx, p *storage.Principal) error {
	w, err := h.store.GetWebhook(c.Context(), p.OrgID)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewWebhook(w))
}

func (h *legacyHandlers) putWebhook(c fiber.Ctx, p *storage.Principal) error {
	return h.setWebhook(c, p, true)
}

func (h *legacyHandlers) patchWebhook(c fiber.Ctx, p *storage.Principal) error {
	return h.setWebhook(c, p, false)
}

func (h *legacyHandlers) setWebhook(c fiber.Ctx, p *storage.Principal, rotate bool) error {
	var in webhookInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	if in.URL == nil {
		return api.FieldErr("url", "This field is required.")
	}
	u, msg := CheckURL(*in.URL)
	if msg != "" {
		return api.FieldErr("url", msg)
	}
	w, err := h.store.SetWebhook(c.Context(), p.OrgID, u, rotate)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewWebhook(w))
}

type webhookView struct {
	URL       string `json:"url"`
	Secret    string `json:"secret"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}
