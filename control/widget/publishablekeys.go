package widget

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// KeyStore is what the publishable key routes need from storage.
type KeyStore interface {
	PublishableKeys(ctx context.Context, orgID int64) ([]storage.PublishableKey, error)
	PublishableKey(ctx context.Context, orgID, id int64) (storage.PublishableKey, error)
	CreatePublishableKey(ctx context.Context, k storage.PublishableKey) (storage.PublishableKey, error)
	UpdatePublishableKey(ctx context.Context, orgID, id int64, fn func(k *storage.PublishableKey) error) (storage.PublishableKey, error)
	DeactivatePublishableKey(ctx context.Context, orgID, id int64) error
}

// Transfers copies and moves publishable keys between organizations.
type Transfers interface {
	TransferPublishableKey(ctx context.Context, fromOrg, toOrg, id, userID int64, copy bool, name *string, agentID *int64) (storage.PublishableTransfer, error)
}

type keyHandlers struct {
	store     KeyStore
	transfers Transfers
}

// KeyRoutes returns the publishable key routes (spec 4.4).
func KeyRoutes(store KeyStore, transfers Transfers) []api.Route {
	h := &keyHandlers{store: store, transfers: transfers}
	return []api.Route{
		{Method: "GET", Path: "/v1/publishable-key", Summary: "List publishable keys, oldest first, deactivated ones included", Tag: "publishable-keys", Auth: api.AuthOrg, ResSchema: "PublishableKey", ResList: true, Handler: h.listPublishableKeys},
		{Method: "POST", Path: "/v1/publishable-key", Summary: "Create a publishable key for the widget (admin+)", Tag: "publishable-keys", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "PublishableKeyInput", ResSchema: "PublishableKey", ResStatus: 201, Errors: []int{400, 403}, Handler: h.createPublishableKey},
		{Method: "GET", Path: "/v1/publishable-key/:key_id", Summary: "Get a publishable key", Tag: "publishable-keys", Auth: api.AuthOrg, ResSchema: "PublishableKey", Errors: []int{404}, Handler: h.getPublishableKey},
		{Method: "PATCH", Path: "/v1/publishable-key/:key_id", Summary: "Change a publishable key; switching mode needs the new mode's field (admin+)", Tag: "publishable-keys", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "PublishableKeyPatch", ResSchema: "PublishableKey", Errors: []int{400, 403, 404, 409}, Handler: h.patchPublishableKey},
		{Method: "DELETE", Path: "/v1/publishable-key/:key_id", Summary: "Deactivate a publishable key: is_active becomes false and it stays listed (admin+)", Tag: "publishable-keys", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResStatus: 204, Errors: []int{403, 404}, Handler: h.deletePublishableKey},
		{Method: "POST", Path: "/v1/publishable-key/:key_id/transfer", Summary: "Copy or move a publishable key to another organization (admin+ in both); a key in agent mode takes agent_id, an agent of the target (a webhook-mode key's optional fallback)", Tag: "publishable-keys", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "PublishableKeyTransferInput", ResSchema: "PublishableKeyTransfer", Errors: []int{400, 403, 404, 409}, Handler: h.transferPublishableKey},
	}
}

// defaultPublishableKeyName is the name of a key created without one.
const defaultPublishableKeyName = "Web Widget"

type publishableKeyView struct {
	ID             int64    `json:"id"`
	Name           string   `json:"name"`
	Key            string   `json:"key"`
	KeyPrefix      string   `json:"key_prefix"`
	AllowedDomains []string `json:"allowed_domains"`
	IsActive       bool     `json:"is_active"`
	IsEnabled      bool     `json:"is_enabled"`
	Mode           string   `json:"mode"`
	AgentID        *int64   `json:"agent_id"`
	AgentName      *string  `json:"agent_name"`
	WebhookURL     *string  `json:"webhook_url"`
	CreatedAt      string   `json:"created_at"`
	UpdatedAt      string   `json:"updated_at"`
}

func viewPublishableKey(k storage.PublishableKey) publishableKeyView {
	d := k.AllowedDomains
	if d == nil {
		d = []string{}
	}
	return publishableKeyView{ID: k.ID, Name: k.Name, Key: k.Key, KeyPrefix: k.KeyPrefix, AllowedDomains: d, IsActive: k.IsActive,
		IsEnabled: k.IsEnabled, Mode: k.Mode, AgentID: k.AgentID, AgentName: k.AgentName, WebhookURL: k.WebhookURL,
		CreatedAt: api.TS(k.CreatedAt), UpdatedAt: api.TS(k.UpdatedAt)}
}

func (h *keyHandlers) listPublishableKeys(c fiber.Ctx, p *storage.Principal) error {
	ks, err := h.store.PublishableKeys(c.Context(), p.OrgID)
	if err != nil {
		return api.StoreErr(err)
	}
	out := make([]publishableKeyView, 0, len(ks))
	for _, k := range ks {
		out = append(out, viewPublishableKey(k))
	}
	return c.JSON(out)
}

func (h *keyHandlers) getPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "key_id")
	if err != nil {
		return err
	}
	k, err := h.store.PublishableKey(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewPublishableKey(k))
}

// pkBody is a create or patch body, read field by field so that absent,
// null and a value are told apart.
type pkBody struct {
	name, mode, webhookURL *string
	setAgent               bool
	agentID                *int64
	domains                []string
	setDomains             bool
	enabled                *bool
}

func readPKBody(body map[string]json.RawMessage, f api.Fields) pkBody {
	var b pkBody
	str := func(name string) *string {
		raw, ok := body[name]
		if !ok || string(raw) == "null" {
			return nil
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			f.Add(name, "Must be a string.")
			return nil
		}
		return &v
	}
	if raw, ok := body["name"]; ok && string(raw) == "null" {
		f.Add("name", "This field may not be null.")
	} else if v := str("name"); v != nil {
		n := f.Name("name", v, true, 120)
		b.name = &n
	}
	b.mode = str("mode")
	if b.mode != nil && *b.mode != storage.PublishableModeAgent && *b.mode != storage.PublishableModeWebhook {
		f.Add("mode", `Must be "agent" or "webhook".`)
		b.mode = nil
	}
	if raw, ok := body["webhook_url"]; ok {
		if u := str("webhook_url"); u != nil {
			clean, msg := webhook.CheckURL(*u)
			if msg != "" {
				f.Add("webhook_url", msg)
			} else {
				b.webhookURL = &clean
			}
		} else if string(raw) == "null" {
			empty := ""
			b.webhookURL = &empty // an explicit null clears it
		}
	}
	b.setAgent, b.agentID = api.OptID(body, "agent_id", f)
	if raw, ok := body["allowed_domains"]; ok {
		b.setDomains = true
		var l []string
		if err := json.Unmarshal(raw, &l); err != nil {
			f.Add("allowed_domains", "Must be a list of domains.")
		} else {
			b.domains = checkAllowedDomains(f, l)
		}
	}
	if raw, ok := body["is_enabled"]; ok {
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil || string(raw) == "null" {
			f.Add("is_enabled", "Must be a boolean.")
		} else {
			b.enabled = &v
		}
	}
	return b
}

// pkErr maps the store's publishable key errors.
func pkErr(err error) error {
	switch {
	case errors.Is(err, storage.ErrAgentNotInOrg):
		return api.FieldErr("agent_id", "Agent not found in this organization.")
	case errors.Is(err, storage.ErrKeyInactive):
		return api.Err(http.StatusConflict, "This publishable key was deactivated; create a new one.")
	}
	return api.StoreErr(err)
}

func (h *keyHandlers) createPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	var body map[string]json.RawMessage
	if err := api.Decode(c, &body); err != nil {
		return err
	}
	f := api.Fields{}
	b := readPKBody(body, f)
	k := storage.PublishableKey{OrgID: p.OrgID, Name: defaultPublishableKeyName, Mode: storage.PublishableModeAgent, IsEnabled: true, AgentID: b.agentID}
	if b.name != nil {
		k.Name = *b.name
	}
	if b.mode != nil {
		k.Mode = *b.mode
	}
	if !b.setDomains {
		f.Add("allowed_domains", msgDomainsRequired)
	}
	k.AllowedDomains = b.domains
	if b.enabled != nil {
		k.IsEnabled = *b.enabled
	}
	if b.webhookURL != nil && *b.webhookURL != "" {
		k.WebhookURL = b.webhookURL
	}
	switch {
	case k.Mode == storage.PublishableModeAgent && k.AgentID == nil && f["agent_id"] == nil:
		f.Add("agent_id", "This field is required in agent mode.")
	case k.Mode == storage.PublishableModeWebhook && k.WebhookURL == nil && f["webhook_url"] == nil:
		f.Add("webhook_url", "This field is required in webhook mode: the HTTPS URL that names the agent of each call.")
	}
	if k.Mode == storage.PublishableModeAgent {
		k.WebhookURL = nil
	}
	if err := f.Err(); err != nil {
		return err
	}
	k, err := h.store.CreatePublishableKey(c.Context(), k)
	if err != nil {
		return pkErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewPublishableKey(k))
}

func (h *keyHandlers) patchPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "key_id")
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := api.Decode(c, &body); err != nil {
		return err
	}
	f := api.Fields{}
	b := readPKBody(body, f)
	if err := f.Err(); err != nil {
		return err
	}
	k, err := h.store.UpdatePublishableKey(c.Context(), p.OrgID, id, func(k *storage.PublishableKey) error {
		if b.name != nil {
			k.Name = *b.name
		}
		if b.setDomains {
			k.AllowedDomains = b.domains
		}
		if b.enabled != nil {
			k.IsEnabled = *b.enabled
		}
		if b.setAgent {
			k.AgentID = b.agentID
		}
		if b.webhookURL != nil {
			k.WebhookURL = b.webhookURL
			if *b.webhookURL == "" {
				k.WebhookURL = nil
			}
		}
		// Switching mode needs the new mode's field in the same request,
		// so a key never changes mode on a value set for another purpose.
		if b.mode != nil && *b.mode != k.Mode {
			switch *b.mode {
			case storage.PublishableModeAgent:
				if b.agentID == nil {
					f.Add("agent_id", "This field is required when switching to agent mode.")
				}
				k.WebhookURL = nil
			case storage.PublishableModeWebhook:
				if b.webhookURL == nil || *b.webhookURL == "" {
					f.Add("webhook_url", "This field is required when switching to webhook mode.")
				}
			}
			k.Mode = *b.mode
		}
		// And the mode's own field cannot be cleared under it.
		if k.Mode == storage.PublishableModeAgent && k.AgentID == nil && f["agent_id"] == nil {
			f.Add("agent_id", "This field is required in agent mode.")
		}
		if k.Mode == storage.PublishableModeWebhook && k.WebhookURL == nil && f["webhook_url"] == nil {
			f.Add("webhook_url", "This field is required in webhook mode.")
		}
		if k.Mode == storage.PublishableModeAgent && b.webhookURL != nil && *b.webhookURL != "" && f["webhook_url"] == nil {
			f.Add("webhook_url", "Agent-mode keys have no webhook URL; switch mode to webhook to use one.")
		}
		return f.Err()
	})
	if err != nil {
		return pkErr(err)
	}
	return c.JSON(viewPublishableKey(k))
}

func (h *keyHandlers) deletePublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "key_id")
	if err != nil {
		return err
	}
	if err := h.store.DeactivatePublishableKey(c.Context(), p.OrgID, id); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

type pkTransferInput struct {
	TargetOrgID *int64  `json:"target_org_id"`
	Mode        *string `json:"mode"`
	Name        *string `json:"name"`
	AgentID     *int64  `json:"agent_id"`
}

func (h *keyHandlers) transferPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "key_id")
	if err != nil {
		return err
	}
	var in pkTransferInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	if in.TargetOrgID == nil || *in.TargetOrgID <= 0 {
		f.Add("target_org_id", "This field is required: the id of the organization to transfer the key to.")
	}
	if in.Mode == nil || (*in.Mode != "copy" && *in.Mode != "move") {
		f.Add("mode", `Must be "copy" or "move".`)
	}
	var name *string
	if in.Name != nil {
		n := f.Name("name", in.Name, true, 120)
		name = &n
	}
	if err := f.Err(); err != nil {
		return err
	}
	tr, err := h.transfers.TransferPublishableKey(c.Context(), p.OrgID, *in.TargetOrgID, id, p.UserID, *in.Mode == "copy", name, in.AgentID)
	switch {
	case errors.Is(err, storage.ErrAgentRequired):
		return api.FieldErr("agent_id", "This field is required for a key in agent mode: an agent of the target organization.")
	case errors.Is(err, storage.ErrAgentNotInOrg):
		return api.FieldErr("agent_id", "Agent not found in the target organization.")
	case errors.Is(err, storage.ErrSameOrg):
		return api.FieldErr("target_org_id", "The key already belongs to this organization.")
	case errors.Is(err, storage.ErrNotMember), errors.Is(err, storage.ErrRole):
		return api.Err(http.StatusForbidden, "Transferring a publishable key needs the admin or owner role in both organizations.")
	case err != nil:
		return pkErr(err)
	}
	return c.JSON(fiber.Map{"source_org_id": p.OrgID, "target_org_id": *in.TargetOrgID, "mode": *in.Mode,
		"cleared_agent_assignments": tr.ClearedAgent, "publishable_key": viewPublishableKey(tr.Key)})
}
