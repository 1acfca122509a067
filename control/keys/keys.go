// Package keys serves the organization's secret API keys
// (/v1/developer/api-keys): listing, creating (the raw key is shown once)
// and revoking them. Admins and owners only.
package keys

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Store is what the key routes need from storage.
type Store interface {
	APIKeys(ctx context.Context, orgID int64) ([]storage.APIKey, error)
	CreateAPIKey(ctx context.Context, orgID, userID int64, name string) (storage.APIKey, string, error)
	RevokeAPIKey(ctx context.Context, orgID int64, id string) error
}

// Credentials is the authenticator's cache, which must not keep serving a
// revoked key.
type Credentials interface {
	ForgetKey(keyID string)
}

type handlers struct {
	store Store
	creds Credentials
}

// Routes returns the key routes.
func Routes(store Store, creds Credentials) []api.Route {
	h := &handlers{store: store, creds: creds}
	return []api.Route{
		{Method: "GET", Path: "/v1/developer/api-keys", Summary: "List API keys, newest first (admin+)", Tag: "keys", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResSchema: "APIKey", ResList: true, Errors: []int{403}, Handler: h.list},
		{Method: "POST", Path: "/v1/developer/api-keys", Summary: "Create an API key; the raw key is shown once (admin+)", Tag: "keys", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "APIKeyInput", ResSchema: "APIKeyCreated", ResStatus: 201, Errors: []int{400, 403}, Handler: h.create},
		{Method: "DELETE", Path: "/v1/developer/api-keys/:key_id", Summary: "Revoke an API key (admin+)", Tag: "keys", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResStatus: 204, Errors: []int{403, 404}, Handler: h.revoke},
	}
}

type keyView struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	KeyPrefix  string  `json:"key_prefix"`
	IsActive   bool    `json:"is_active"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
	Key        string  `json:"key,omitempty"`
}

func viewKey(k storage.APIKey) keyView {
	return keyView{ID: k.ID, Name: k.Name, KeyPrefix: k.KeyPrefix, IsActive: k.RevokedAt == nil, CreatedAt: api.TS(k.CreatedAt), LastUsedAt: api.TSPtr(k.LastUsedAt), RevokedAt: api.TSPtr(k.RevokedAt)}
}

type keyInput struct {
	Name *string `json:"name"`
}

func (h *handlers) list(c fiber.Ctx, p *storage.Principal) error {
	keys, err := h.store.APIKeys(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]keyView, len(keys))
	for i, k := range keys {
		out[i] = viewKey(k)
	}
	return c.JSON(out)
}

func (h *handlers) create(c fiber.Ctx, p *storage.Principal) error {
	name := "Default key"
	if len(c.Body()) > 0 {
		var in keyInput
		if err := api.Decode(c, &in); err != nil {
			return err
		}
		if in.Name != nil {
			f := api.Fields{}
			name = f.Name("name", in.Name, false, 120)
			if err := f.Err(); err != nil {
				return err
			}
		}
	}
	k, raw, err := h.store.CreateAPIKey(c.Context(), p.OrgID, p.UserID, name)
	if err != nil {
		return api.StoreErr(err)
	}
	v := viewKey(k)
	v.Key = raw
	return c.Status(http.StatusCreated).JSON(v)
}

func (h *handlers) revoke(c fiber.Ctx, p *storage.Principal) error {
	id := c.Params("key_id")
	if err := h.store.RevokeAPIKey(c.Context(), p.OrgID, id); err != nil {
		return api.StoreErr(err)
	}
	h.creds.ForgetKey(id)
	return c.SendStatus(http.StatusNoContent)
}
