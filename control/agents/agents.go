package agents

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Store is what the agent routes need from storage.
type Store interface {
	Agents(ctx context.Context, orgID int64) ([]storage.Agent, error)
	Agent(ctx context.Context, orgID, id int64) (storage.Agent, error)
	CreateAgent(ctx context.Context, a storage.Agent, actor *int64, snapshot func(storage.Agent) (storage.VersionInput, error)) (storage.Agent, error)
	UpdateAgent(ctx context.Context, orgID, id int64, actor *int64, fn func(a *storage.Agent) (*storage.VersionInput, error)) (storage.Agent, error)
	DeleteAgent(ctx context.Context, orgID, id int64, actor *int64) error
	AgentVersions(ctx context.Context, orgID, id int64, limit int) (int64, []storage.Version, error)
}

// Schema is the agent configuration C: its fields by JSON name, its
// defaults and its rules. Messages go to f under prefix plus the field
// name ("draft_" for staged fields).
type Schema[C any] interface {
	// Default is the configuration of a new agent before its body applies.
	Default() C
	// Decode reads a stored configuration over the defaults.
	Decode(raw []byte) (C, error)
	// Names lists the fields in declaration order.
	Names() []string
	// Set decodes raw into field name of c; the message says why it
	// cannot, or is "".
	Set(c *C, name string, raw json.RawMessage) string
	// Validate checks c and normalizes it in place.
	Validate(c *C, f api.Fields, prefix string)
	// Diff lists the fields whose values differ between a and b.
	Diff(a, b C) []string
	// Values maps every field name to its value in c.
	Values(c C) map[string]any
}

// RefChecker is a Schema whose fields name other resources of the
// organization: CheckRefs adds a message under prefix+field when field of
// c names one the organization does not have. The routes check the
// fields a request sends, before saving (deploy promotes drafts checked
// when staged).
type RefChecker[C any] interface {
	CheckRefs(ctx context.Context, orgID int64, c *C, field string, f api.Fields, prefix string) error
}

// checkRefs checks the fields body sends (X on live, draft_X on draft)
// when the schema is a RefChecker.
func (h *handlers[C]) checkRefs(ctx context.Context, orgID int64, body map[string]json.RawMessage, live, draft *C, f api.Fields) error {
	rc, ok := any(h.schema).(RefChecker[C])
	if !ok {
		return nil
	}
	for _, name := range h.schema.Names() {
		if _, sent := body[name]; sent {
			if err := rc.CheckRefs(ctx, orgID, live, name, f, ""); err != nil {
				return err
			}
		}
		if _, sent := body["draft_"+name]; sent {
			if err := rc.CheckRefs(ctx, orgID, draft, name, f, "draft_"); err != nil {
				return err
			}
		}
	}
	return nil
}

// Product is an agent product tier as GET /v1/agent-products shows it.
type Product struct {
	Name           string `json:"name"`
	CentsPerMinute int64  `json:"cents_per_minute"`
	Default        bool   `json:"default"`
}

type handlers[C any] struct {
	store    Store
	schema   Schema[C]
	products []Product
}

// Routes returns the agent routes over schema; products are the tiers an
// agent may use.
func Routes[C any](store Store, schema Schema[C], products []Product) []api.Route {
	h := &handlers[C]{store: store, schema: schema, products: products}
	return []api.Route{
		{Method: "GET", Path: "/v1/agents", Summary: "List agents, newest first", Tag: "agents", Auth: api.AuthOrg, ResSchema: "Agent", ResList: true, Handler: h.list},
		{Method: "POST", Path: "/v1/agents", Summary: "Create an agent; its configuration is deployed as revision 1", Tag: "agents", Auth: api.AuthOrg, ReqSchema: "AgentInput", ResSchema: "Agent", ResStatus: 201, Errors: []int{400}, Handler: h.create},
		{Method: "GET", Path: "/v1/agents/:agent_id", Summary: "Get an agent", Tag: "agents", Auth: api.AuthOrg, ResSchema: "Agent", Errors: []int{404}, Handler: h.get},
		{Method: "PATCH", Path: "/v1/agents/:agent_id", Summary: "Change an agent: X changes the deployed value (and the draft), draft_X stages", Tag: "agents", Auth: api.AuthOrg, ReqSchema: "AgentInput", ResSchema: "Agent", Errors: []int{400, 404}, Handler: h.patch},
		{Method: "DELETE", Path: "/v1/agents/:agent_id", Summary: "Delete an agent; phone-number assignments to it are cleared", Tag: "agents", Auth: api.AuthOrg, ResStatus: 204, Errors: []int{404}, Handler: h.delete},
		{Method: "POST", Path: "/v1/agents/:agent_id/deploy", Summary: "Promote every draft_X to X and record a version", Tag: "agents", Auth: api.AuthOrg, ResSchema: "Agent", Errors: []int{400, 404}, Handler: h.deploy},
		{Method: "GET", Path: "/v1/agents/:agent_id/versions", Summary: "Deployed versions, newest first (query limit, default 20, max 100)", Tag: "agents", Auth: api.AuthOrg, ResSchema: "VersionList", Errors: []int{400, 404}, Handler: h.versions},
		{Method: "GET", Path: "/v1/agent-products", Summary: "Agent product tiers and their per-minute prices", Tag: "agents", Auth: api.AuthOrg, ResSchema: "Product", ResList: true, Handler: h.listProducts},
	}
}

// view renders an agent: id, name, every config field X (deployed) and
// draft_X (staged), the deployed revision and timestamps.
func (h *handlers[C]) view(a storage.Agent) (map[string]any, error) {
	live, err := h.schema.Decode(a.Config)
	if err != nil {
		return nil, err
	}
	draft, err := h.schema.Decode(a.Draft)
	if err != nil {
		return nil, err
	}
	v := h.snapshot(a.ID, a.Name, live)
	for name, val := range h.schema.Values(draft) {
		v["draft_"+name] = val
	}
	v["version"] = a.Revision
	v["has_undeployed_changes"] = len(h.schema.Diff(live, draft)) > 0
	v["created_at"] = api.TS(a.CreatedAt)
	v["updated_at"] = api.TS(a.UpdatedAt)
	v["deployed_at"] = api.TSPtr(a.DeployedAt)
	return v, nil
}

// snapshot is what a version records: id, name and the deployed
// configuration.
func (h *handlers[C]) snapshot(id int64, name string, c C) map[string]any {
	v := h.schema.Values(c)
	v["id"], v["name"] = id, name
	return v
}

// apply applies a create or PATCH body to live and draft: X sets both,
// draft_X sets the draft only, both at once is an error. It validates
// and normalizes what it touched.
func (h *handlers[C]) apply(body map[string]json.RawMessage, live, draft *C, f api.Fields) {
	direct := map[string]bool{}
	for _, name := range h.schema.Names() {
		raw, hasLive := body[name]
		rawDraft, hasDraft := body["draft_"+name]
		switch {
		case hasLive && hasDraft:
			f.Add("draft_"+name, "Send either "+name+" or draft_"+name+", not both.")
		case hasLive:
			direct[name] = true
			if msg := h.schema.Set(live, name, raw); msg != "" {
				f.Add(name, msg)
			} else {
				h.schema.Set(draft, name, raw)
			}
		case hasDraft:
			if msg := h.schema.Set(draft, name, rawDraft); msg != "" {
				f.Add("draft_"+name, msg)
			}
		}
	}
	if len(f) > 0 {
		return
	}
	h.schema.Validate(live, f, "")
	df := api.Fields{}
	h.schema.Validate(draft, df, "draft_")
	for k, msgs := range df {
		// A field sent as X was checked once already, as X.
		if name := k[len("draft_"):]; direct[name] {
			if _, reported := f[name]; reported {
				continue
			}
		}
		f[k] = append(f[k], msgs...)
	}
}

func (h *handlers[C]) list(c fiber.Ctx, p *storage.Principal) error {
	as, err := h.store.Agents(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(as))
	for i, a := range as {
		if out[i], err = h.view(a); err != nil {
			return err
		}
	}
	return c.JSON(out)
}

func (h *handlers[C]) create(c fiber.Ctx, p *storage.Principal) error {
	var body map[string]json.RawMessage
	if err := api.Decode(c, &body); err != nil {
		return err
	}
	f := api.Fields{}
	name := agentName(body, f, true)
	live, draft := h.schema.Default(), h.schema.Default()
	h.apply(body, &live, &draft, f)
	if err := f.Err(); err != nil {
		return err
	}
	if err := h.checkRefs(c.Context(), p.OrgID, body, &live, &draft, f); err != nil {
		return err
	}
	if err := f.Err(); err != nil {
		return err
	}
	cfgJSON, err := json.Marshal(live)
	if err != nil {
		return err
	}
	draftJSON, err := json.Marshal(draft)
	if err != nil {
		return err
	}
	actor := p.MemberID
	a, err := h.store.CreateAgent(c.Context(), storage.Agent{OrgID: p.OrgID, Name: name, Config: cfgJSON, Draft: draftJSON}, &actor,
		func(a storage.Agent) (storage.VersionInput, error) {
			snap, err := json.Marshal(h.snapshot(a.ID, a.Name, live))
			return storage.VersionInput{Snapshot: snap, ChangedFields: append([]string{"name"}, h.schema.Names()...)}, err
		})
	if err != nil {
		return api.StoreErr(err)
	}
	v, err := h.view(a)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(v)
}

// agentName reads and checks "name" (1-120 characters).
func agentName(body map[string]json.RawMessage, f api.Fields, required bool) string {
	raw, ok := body["name"]
	if !ok {
		if required {
			f.Add("name", "This field is required.")
		}
		return ""
	}
	var name *string
	if err := json.Unmarshal(raw, &name); err != nil || name == nil {
		f.Add("name", "Must be a string.")
		return ""
	}
	return f.Name("name", name, true, 120)
}

func (h *handlers[C]) get(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "agent_id")
	if err != nil {
		return err
	}
	a, err := h.store.Agent(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	v, err := h.view(a)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (h *handlers[C]) patch(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "agent_id")
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := api.Decode(c, &body); err != nil {
		return err
	}
	actor := p.MemberID
	a, err := h.store.UpdateAgent(c.Context(), p.OrgID, id, &actor, func(a *storage.Agent) (*storage.VersionInput, error) {
		live, err := h.schema.Decode(a.Config)
		if err != nil {
			return nil, err
		}
		draft, err := h.schema.Decode(a.Draft)
		if err != nil {
			return nil, err
		}
		old := live
		f := api.Fields{}
		name := a.Name
		if _, ok := body["name"]; ok {
			name = agentName(body, f, true)
		}
		h.apply(body, &live, &draft, f)
		if err := f.Err(); err != nil {
			return nil, err
		}
		if err := h.checkRefs(c.Context(), p.OrgID, body, &live, &draft, f); err != nil {
			return nil, err
		}
		if err := f.Err(); err != nil {
			return nil, err
		}
		changed := h.schema.Diff(old, live)
		if name != a.Name {
			changed = append([]string{"name"}, changed...)
		}
		a.Name = name
		if a.Config, err = json.Marshal(live); err != nil {
			return nil, err
		}
		if a.Draft, err = json.Marshal(draft); err != nil {
			return nil, err
		}
		if len(changed) == 0 {
			return nil, nil
		}
		if len(h.schema.Diff(old, live)) > 0 {
			now := time.Now()
			a.DeployedAt = &now
		}
		snap, err := json.Marshal(h.snapshot(a.ID, a.Name, live))
		return &storage.VersionInput{Snapshot: snap, ChangedFields: changed}, err
	})
	if err != nil {
		return api.StoreErr(err)
	}
	v, err := h.view(a)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// errNothingToDeploy aborts a deploy whose drafts equal the deployed
// configuration: the agent is returned unchanged, no version recorded.
var errNothingToDeploy = errors.New("nothing to deploy")

func (h *handlers[C]) deploy(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "agent_id")
	if err != nil {
		return err
	}
	actor := p.MemberID
	ctx := c.Context()
	a, err := h.store.UpdateAgent(ctx, p.OrgID, id, &actor, func(a *storage.Agent) (*storage.VersionInput, error) {
		live, err := h.schema.Decode(a.Config)
		if err != nil {
			return nil, err
		}
		draft, err := h.schema.Decode(a.Draft)
		if err != nil {
			return nil, err
		}
		f := api.Fields{}
		h.schema.Validate(&draft, f, "draft_")
		if err := f.Err(); err != nil {
			return nil, err
		}
		changed := h.schema.Diff(live, draft)
		if len(changed) == 0 {
			return nil, errNothingToDeploy
		}
		if a.Config, err = json.Marshal(draft); err != nil {
			return nil, err
		}
		now := time.Now()
		a.DeployedAt = &now
		snap, err := json.Marshal(h.snapshot(a.ID, a.Name, draft))
		return &storage.VersionInput{Snapshot: snap, ChangedFields: changed}, err
	})
	if errors.Is(err, errNothingToDeploy) {
		a, err = h.store.Agent(ctx, p.OrgID, id)
	}
	if err != nil {
		return api.StoreErr(err)
	}
	v, err := h.view(a)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (h *handlers[C]) delete(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "agent_id")
	if err != nil {
		return err
	}
	actor := p.MemberID
	if err := h.store.DeleteAgent(c.Context(), p.OrgID, id, &actor); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (h *handlers[C]) versions(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "agent_id")
	if err != nil {
		return err
	}
	limit, err := api.QueryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	n, vs, err := h.store.AgentVersions(c.Context(), p.OrgID, id, limit)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(api.ViewVersions(n, vs))
}

func (h *handlers[C]) listProducts(c fiber.Ctx, _ *storage.Principal) error {
	return c.JSON(h.products)
}

// View renders agent a as GET /v1/agents/{agent_id} does, for other
// surfaces of the same API (the MCP get_agent tool).
func View[C any](schema Schema[C], a storage.Agent) (map[string]any, error) {
	h := handlers[C]{schema: schema}
	return h.view(a)
}
