package control

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

func (s *Server) registerAgentRoutes() {
	s.add(route{method: "GET", path: "/v1/agents", summary: "List agents, newest first", tag: "agents", auth: authOrg, resSchema: "Agent", resList: true, handler: s.listAgents})
	s.add(route{method: "POST", path: "/v1/agents", summary: "Create an agent; its configuration is deployed as revision 1", tag: "agents", auth: authOrg, reqSchema: "AgentInput", resSchema: "Agent", resStatus: 201, errors: []int{400}, handler: s.createAgent})
	s.add(route{method: "GET", path: "/v1/agents/:agent_id", summary: "Get an agent", tag: "agents", auth: authOrg, resSchema: "Agent", errors: []int{404}, handler: s.getAgent})
	s.add(route{method: "PATCH", path: "/v1/agents/:agent_id", summary: "Change an agent: X changes the deployed value (and the draft), draft_X stages", tag: "agents", auth: authOrg, reqSchema: "AgentInput", resSchema: "Agent", errors: []int{400, 404}, handler: s.patchAgent})
	s.add(route{method: "DELETE", path: "/v1/agents/:agent_id", summary: "Delete an agent; phone-number assignments to it are cleared", tag: "agents", auth: authOrg, resStatus: 204, errors: []int{404}, handler: s.deleteAgent})
	s.add(route{method: "POST", path: "/v1/agents/:agent_id/deploy", summary: "Promote every draft_X to X and record a version", tag: "agents", auth: authOrg, resSchema: "Agent", errors: []int{400, 404}, handler: s.deployAgent})
	s.add(route{method: "GET", path: "/v1/agents/:agent_id/versions", summary: "Deployed versions, newest first (query limit, default 20, max 100)", tag: "agents", auth: authOrg, resSchema: "VersionList", errors: []int{400, 404}, handler: s.agentVersions})
	s.add(route{method: "GET", path: "/v1/agent-products", summary: "Agent product tiers and their per-minute prices", tag: "agents", auth: authOrg, resSchema: "Product", resList: true, handler: s.listProducts})
}

// agentView renders an agent: id, name, every config field X (deployed)
// and draft_X (staged), the deployed revision and timestamps.
func (s *Server) agentView(a storage.Agent) (map[string]any, error) {
	live, err := s.res.decodeConfig(a.Config)
	if err != nil {
		return nil, err
	}
	draft, err := s.res.decodeConfig(a.Draft)
	if err != nil {
		return nil, err
	}
	v := agentSnapshot(a.ID, a.Name, live)
	dv := reflect.ValueOf(draft)
	for _, f := range configFields {
		v["draft_"+f.name] = dv.Field(f.index).Interface()
	}
	v["version"] = a.Revision
	v["has_undeployed_changes"] = len(diffConfig(live, draft)) > 0
	v["created_at"] = ts(a.CreatedAt)
	v["updated_at"] = ts(a.UpdatedAt)
	v["deployed_at"] = tsPtr(a.DeployedAt)
	return v, nil
}

// agentSnapshot is what a version records: id, name and the deployed
// configuration.
func agentSnapshot(id int64, name string, c AgentConfig) map[string]any {
	v := map[string]any{"id": id, "name": name}
	cv := reflect.ValueOf(c)
	for _, f := range configFields {
		v[f.name] = cv.Field(f.index).Interface()
	}
	return v
}

// applyAgentBody applies a create or PATCH body to live and draft: X
// sets both, draft_X sets the draft only, both at once is an error. It
// validates and normalizes what it touched and reports whether a
// deployed field was given.
func (r *resources) applyAgentBody(body map[string]json.RawMessage, live, draft *AgentConfig, f fields) {
	direct := map[string]bool{}
	for _, cf := range configFields {
		raw, hasLive := body[cf.name]
		rawDraft, hasDraft := body["draft_"+cf.name]
		switch {
		case hasLive && hasDraft:
			f.add("draft_"+cf.name, "Send either "+cf.name+" or draft_"+cf.name+", not both.")
		case hasLive:
			direct[cf.name] = true
			if msg := setField(live, cf, raw); msg != "" {
				f.add(cf.name, msg)
			} else {
				setField(draft, cf, raw)
			}
		case hasDraft:
			if msg := setField(draft, cf, rawDraft); msg != "" {
				f.add("draft_"+cf.name, msg)
			}
		}
	}
	if len(f) > 0 {
		return
	}
	r.validateConfig(live, f, "")
	df := fields{}
	r.validateConfig(draft, df, "draft_")
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

func (s *Server) listAgents(c fiber.Ctx, p *storage.Principal) error {
	as, err := s.store.Agents(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(as))
	for i, a := range as {
		if out[i], err = s.agentView(a); err != nil {
			return err
		}
	}
	return c.JSON(out)
}

func (s *Server) createAgent(c fiber.Ctx, p *storage.Principal) error {
	var body map[string]json.RawMessage
	if err := decode(c, &body); err != nil {
		return err
	}
	f := fields{}
	name := agentName(body, f, true)
	live, draft := s.res.defaultAgentConfig(), s.res.defaultAgentConfig()
	s.res.applyAgentBody(body, &live, &draft, f)
	if err := f.err(); err != nil {
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
	a, err := s.store.CreateAgent(c.Context(), storage.Agent{OrgID: p.OrgID, Name: name, Config: cfgJSON, Draft: draftJSON}, &actor,
		func(a storage.Agent) (storage.VersionInput, error) {
			snap, err := json.Marshal(agentSnapshot(a.ID, a.Name, live))
			return storage.VersionInput{Snapshot: snap, ChangedFields: append([]string{"name"}, configFieldNames()...)}, err
		})
	if err != nil {
		return storeErr(err)
	}
	v, err := s.agentView(a)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(v)
}

// agentName reads and checks "name" (1-120 characters).
func agentName(body map[string]json.RawMessage, f fields, required bool) string {
	raw, ok := body["name"]
	if !ok {
		if required {
			f.add("name", "This field is required.")
		}
		return ""
	}
	var name *string
	if err := json.Unmarshal(raw, &name); err != nil || name == nil {
		f.add("name", "Must be a string.")
		return ""
	}
	return f.name("name", name, true, 120)
}

func (s *Server) getAgent(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "agent_id")
	if err != nil {
		return err
	}
	a, err := s.store.Agent(c.Context(), p.OrgID, id)
	if err != nil {
		return storeErr(err)
	}
	v, err := s.agentView(a)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (s *Server) patchAgent(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "agent_id")
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := decode(c, &body); err != nil {
		return err
	}
	actor := p.MemberID
	a, err := s.store.UpdateAgent(c.Context(), p.OrgID, id, &actor, func(a *storage.Agent) (*storage.VersionInput, error) {
		live, err := s.res.decodeConfig(a.Config)
		if err != nil {
			return nil, err
		}
		draft, err := s.res.decodeConfig(a.Draft)
		if err != nil {
			return nil, err
		}
		old := live
		f := fields{}
		name := a.Name
		if _, ok := body["name"]; ok {
			name = agentName(body, f, true)
		}
		s.res.applyAgentBody(body, &live, &draft, f)
		if err := f.err(); err != nil {
			return nil, err
		}
		changed := diffConfig(old, live)
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
		if len(diffConfig(old, live)) > 0 {
			now := time.Now()
			a.DeployedAt = &now
		}
		snap, err := json.Marshal(agentSnapshot(a.ID, a.Name, live))
		return &storage.VersionInput{Snapshot: snap, ChangedFields: changed}, err
	})
	if err != nil {
		return storeErr(err)
	}
	v, err := s.agentView(a)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// errNothingToDeploy aborts a deploy whose drafts equal the deployed
// configuration: the agent is returned unchanged, no version recorded.
var errNothingToDeploy = errors.New("nothing to deploy")

func (s *Server) deployAgent(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "agent_id")
	if err != nil {
		return err
	}
	actor := p.MemberID
	ctx := c.Context()
	a, err := s.store.UpdateAgent(ctx, p.OrgID, id, &actor, func(a *storage.Agent) (*storage.VersionInput, error) {
		live, err := s.res.decodeConfig(a.Config)
		if err != nil {
			return nil, err
		}
		draft, err := s.res.decodeConfig(a.Draft)
		if err != nil {
			return nil, err
		}
		f := fields{}
		s.res.validateConfig(&draft, f, "draft_")
		if err := f.err(); err != nil {
			return nil, err
		}
		changed := diffConfig(live, draft)
		if len(changed) == 0 {
			return nil, errNothingToDeploy
		}
		if a.Config, err = json.Marshal(draft); err != nil {
			return nil, err
		}
		now := time.Now()
		a.DeployedAt = &now
		snap, err := json.Marshal(agentSnapshot(a.ID, a.Name, draft))
		return &storage.VersionInput{Snapshot: snap, ChangedFields: changed}, err
	})
	if errors.Is(err, errNothingToDeploy) {
		a, err = s.store.Agent(ctx, p.OrgID, id)
	}
	if err != nil {
		return storeErr(err)
	}
	v, err := s.agentView(a)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (s *Server) deleteAgent(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "agent_id")
	if err != nil {
		return err
	}
	actor := p.MemberID
	if err := s.store.DeleteAgent(c.Context(), p.OrgID, id, &actor); err != nil {
		return storeErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Server) agentVersions(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "agent_id")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	n, vs, err := s.store.AgentVersions(c.Context(), p.OrgID, id, limit)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewVersions(n, vs))
}

type productView struct {
	Name           string `json:"name"`
	CentsPerMinute int64  `json:"cents_per_minute"`
	Default        bool   `json:"default"`
}

func (s *Server) listProducts(c fiber.Ctx, _ *storage.Principal) error {
	out := make([]productView, len(s.res.cfg.Products))
	for i, p := range s.res.cfg.Products {
		out[i] = productView{Name: p.Name, CentsPerMinute: p.CentsPerMinute, Default: p.Name == s.res.cfg.DefaultProduct}
	}
	return c.JSON(out)
}

// versionView is one version record (spec 2.7, also used for agents).
// viewVersions is the body of a versions list (api.ViewVersions).
func viewVersions(n int64, vs []storage.Version) map[string]any { return api.ViewVersions(n, vs) }

// queryLimit reads the "limit" query parameter (api.QueryLimit).
func queryLimit(c fiber.Ctx, def, max int) (int, error) { return api.QueryLimit(c, def, max) }
