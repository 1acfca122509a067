package control

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// registerPublishableKeyRoutes adds the publishable key routes (spec 4.4),
// the widget's signalling and script, and mic sessions.
func (s *Server) registerPublishableKeyRoutes() {
	s.add(route{method: "GET", path: "/v1/publishable-key", summary: "List publishable keys, oldest first, deactivated ones included", tag: "publishable-keys", auth: authOrg, resSchema: "PublishableKey", resList: true, handler: s.listPublishableKeys})
	s.add(route{method: "POST", path: "/v1/publishable-key", summary: "Create a publishable key for the widget (admin+)", tag: "publishable-keys", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "PublishableKeyInput", resSchema: "PublishableKey", resStatus: 201, errors: []int{400, 403}, handler: s.createPublishableKey})
	s.add(route{method: "GET", path: "/v1/publishable-key/:key_id", summary: "Get a publishable key", tag: "publishable-keys", auth: authOrg, resSchema: "PublishableKey", errors: []int{404}, handler: s.getPublishableKey})
	s.add(route{method: "PATCH", path: "/v1/publishable-key/:key_id", summary: "Change a publishable key; switching mode needs the new mode's field (admin+)", tag: "publishable-keys", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "PublishableKeyPatch", resSchema: "PublishableKey", errors: []int{400, 403, 404, 409}, handler: s.patchPublishableKey})
	s.add(route{method: "DELETE", path: "/v1/publishable-key/:key_id", summary: "Deactivate a publishable key: is_active becomes false and it stays listed (admin+)", tag: "publishable-keys", auth: authOrg, minRole: storage.RoleAdmin, resStatus: 204, errors: []int{403, 404}, handler: s.deletePublishableKey})
	s.add(route{method: "POST", path: "/v1/publishable-key/:key_id/transfer", summary: "Copy or move a publishable key to another organization (admin+ in both); the agent assignment is cleared", tag: "publishable-keys", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "PublishableKeyTransferInput", resSchema: "PublishableKeyTransfer", errors: []int{400, 403, 404, 409}, handler: s.transferPublishableKey})
	s.registerWidgetRoutes()
	s.registerMicSessionRoutes()
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
		CreatedAt: ts(k.CreatedAt), UpdatedAt: ts(k.UpdatedAt)}
}

func (s *Server) listPublishableKeys(c fiber.Ctx, p *storage.Principal) error {
	ks, err := s.store.PublishableKeys(c.Context(), p.OrgID)
	if err != nil {
		return storeErr(err)
	}
	out := make([]publishableKeyView, 0, len(ks))
	for _, k := range ks {
		out = append(out, viewPublishableKey(k))
	}
	return c.JSON(out)
}

func (s *Server) getPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "key_id")
	if err != nil {
		return err
	}
	k, err := s.store.PublishableKey(c.Context(), p.OrgID, id)
	if err != nil {
		return storeErr(err)
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

func readPKBody(body map[string]json.RawMessage, f fields) pkBody {
	var b pkBody
	str := func(name string) *string {
		raw, ok := body[name]
		if !ok || string(raw) == "null" {
			return nil
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			f.add(name, "Must be a string.")
			return nil
		}
		return &v
	}
	if raw, ok := body["name"]; ok && string(raw) == "null" {
		f.add("name", "This field may not be null.")
	} else if v := str("name"); v != nil {
		n := f.name("name", v, true, 120)
		b.name = &n
	}
	b.mode = str("mode")
	if b.mode != nil && *b.mode != storage.PublishableModeAgent && *b.mode != storage.PublishableModeWebhook {
		f.add("mode", `Must be "agent" or "webhook".`)
		b.mode = nil
	}
	if raw, ok := body["webhook_url"]; ok {
		if u := str("webhook_url"); u != nil {
			clean, msg := webhook.CheckURL(*u)
			if msg != "" {
				f.add("webhook_url", msg)
			} else {
				b.webhookURL = &clean
			}
		} else if string(raw) == "null" {
			empty := ""
			b.webhookURL = &empty // an explicit null clears it
		}
	}
	b.setAgent, b.agentID = optID(body, "agent_id", f)
	if raw, ok := body["allowed_domains"]; ok {
		b.setDomains = true
		var l []string
		if err := json.Unmarshal(raw, &l); err != nil {
			f.add("allowed_domains", "Must be a list of domains.")
		} else {
			b.domains = checkAllowedDomains(f, l)
		}
	}
	if raw, ok := body["is_enabled"]; ok {
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil || string(raw) == "null" {
			f.add("is_enabled", "Must be a boolean.")
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
		return fieldErr("agent_id", "Agent not found in this organization.")
	case errors.Is(err, storage.ErrKeyInactive):
		return apiErr(http.StatusConflict, "This publishable key was deactivated; create a new one.")
	}
	return storeErr(err)
}

func (s *Server) createPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	var body map[string]json.RawMessage
	if err := decode(c, &body); err != nil {
		return err
	}
	f := fields{}
	b := readPKBody(body, f)
	k := storage.PublishableKey{OrgID: p.OrgID, Name: defaultPublishableKeyName, Mode: storage.PublishableModeAgent, IsEnabled: true, AgentID: b.agentID}
	if b.name != nil {
		k.Name = *b.name
	}
	if b.mode != nil {
		k.Mode = *b.mode
	}
	if !b.setDomains {
		f.add("allowed_domains", msgDomainsRequired)
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
		f.add("agent_id", "This field is required in agent mode.")
	case k.Mode == storage.PublishableModeWebhook && k.WebhookURL == nil && f["webhook_url"] == nil:
		f.add("webhook_url", "This field is required in webhook mode: the HTTPS URL that names the agent of each call.")
	}
	if k.Mode == storage.PublishableModeAgent {
		k.WebhookURL = nil
	}
	if err := f.err(); err != nil {
		return err
	}
	k, err := s.store.CreatePublishableKey(c.Context(), k)
	if err != nil {
		return pkErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewPublishableKey(k))
}

func (s *Server) patchPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "key_id")
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := decode(c, &body); err != nil {
		return err
	}
	f := fields{}
	b := readPKBody(body, f)
	if err := f.err(); err != nil {
		return err
	}
	k, err := s.store.UpdatePublishableKey(c.Context(), p.OrgID, id, func(k *storage.PublishableKey) error {
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
					f.add("agent_id", "This field is required when switching to agent mode.")
				}
				k.WebhookURL = nil
			case storage.PublishableModeWebhook:
				if b.webhookURL == nil || *b.webhookURL == "" {
					f.add("webhook_url", "This field is required when switching to webhook mode.")
				}
			}
			k.Mode = *b.mode
		}
		// And the mode's own field cannot be cleared under it.
		if k.Mode == storage.PublishableModeAgent && k.AgentID == nil && f["agent_id"] == nil {
			f.add("agent_id", "This field is required in agent mode.")
		}
		if k.Mode == storage.PublishableModeWebhook && k.WebhookURL == nil && f["webhook_url"] == nil {
			f.add("webhook_url", "This field is required in webhook mode.")
		}
		if k.Mode == storage.PublishableModeAgent && b.webhookURL != nil && *b.webhookURL != "" && f["webhook_url"] == nil {
			f.add("webhook_url", "Agent-mode keys have no webhook URL; switch mode to webhook to use one.")
		}
		return f.err()
	})
	if err != nil {
		return pkErr(err)
	}
	return c.JSON(viewPublishableKey(k))
}

func (s *Server) deletePublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "key_id")
	if err != nil {
		return err
	}
	if err := s.store.DeactivatePublishableKey(c.Context(), p.OrgID, id); err != nil {
		return storeErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

type pkTransferInput struct {
	TargetOrgID *int64  `json:"target_org_id"`
	Mode        *string `json:"mode"`
	Name        *string `json:"name"`
}

func (s *Server) transferPublishableKey(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "key_id")
	if err != nil {
		return err
	}
	var in pkTransferInput
	if err := decode(c, &in); err != nil {
		return err
	}
	f := fields{}
	if in.TargetOrgID == nil || *in.TargetOrgID <= 0 {
		f.add("target_org_id", "This field is required: the id of the organization to transfer the key to.")
	}
	if in.Mode == nil || (*in.Mode != "copy" && *in.Mode != "move") {
		f.add("mode", `Must be "copy" or "move".`)
	}
	var name *string
	if in.Name != nil {
		n := f.name("name", in.Name, true, 120)
		name = &n
	}
	if err := f.err(); err != nil {
		return err
	}
	tr, err := s.store.TransferPublishableKey(c.Context(), p.OrgID, *in.TargetOrgID, id, p.UserID, *in.Mode == "copy", name)
	switch {
	case errors.Is(err, storage.ErrSameOrg):
		return fieldErr("target_org_id", "The key already belongs to this organization.")
	case errors.Is(err, storage.ErrNotMember), errors.Is(err, storage.ErrRole):
		return apiErr(http.StatusForbidden, "Transferring a publishable key needs the admin or owner role in both organizations.")
	case err != nil:
		return pkErr(err)
	}
	return c.JSON(fiber.Map{"source_org_id": p.OrgID, "target_org_id": *in.TargetOrgID, "mode": *in.Mode,
		"cleared_agent_assignment": tr.ClearedAgent, "publishable_key": viewPublishableKey(tr.Key)})
}
