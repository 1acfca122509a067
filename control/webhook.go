package control

import (
	"net"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v3"

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
	u, msg := checkWebhookURL(*in.URL)
	if msg != "" {
		return fieldErr("url", msg)
	}
	w, err := s.store.SetWebhook(c.Context(), p.OrgID, u, rotate)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewWebhook(w))
}

// checkWebhookURL accepts https URLs, and http only for localhost.
func checkWebhookURL(raw string) (string, string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "This field may not be blank."
	}
	if len(raw) > 2048 {
		return "", "Ensure this field has no more than 2048 characters."
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", "Enter a valid URL."
	}
	if u.Scheme == "http" && !isLocalHost(u.Hostname()) {
		return "", "The URL must use https (http is allowed only for localhost)."
	}
	return u.String(), ""
}

func isLocalHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

type webhookView struct {
	URL       string `json:"url"`
	Secret    string `json:"secret"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}
