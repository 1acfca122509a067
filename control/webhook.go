package control

import (
	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

type webhookInput struct {
	URL *string `json:"url"`
}

func viewWebhook(w storage.Webhook) webhookView {
	return webhookView{URL: w.URL, Secret: w.Secret, CreatedAt: ts(w.CreatedAt), UpdatedAt: ts(w.UpdatedAt)}
}

func (s *Server) getWebhook(c fiber.Ctx, p *storage.Principal) error {
	w, err := s.store.GetWebhook(c.Context(), p.OrgID)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewWebhook(w))
}

func (s *Server) putWebhook(c fiber.Ctx, p *storage.Principal) error {
	return s.setWebhook(c, p, true)
}

func (s *Server) patchWebhook(c fiber.Ctx, p *storage.Principal) error {
	return s.setWebhook(c, p, false)
}

func (s *Server) setWebhook(c fiber.Ctx, p *storage.Principal, rotate bool) error {
	var in webhookInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.URL == nil {
		return fieldErr("url", "This field is required.")
	}
	u, msg := webhook.CheckURL(*in.URL)
	if msg != "" {
		return fieldErr("url", msg)
	}
	w, err := s.store.SetWebhook(c.Context(), p.OrgID, u, rotate)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewWebhook(w))
}
