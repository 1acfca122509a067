package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Store is what the scenario routes need from storage.
type Store interface {
	Scenarios(ctx context.Context, orgID, agentID int64) ([]storage.Scenario, error)
	Scenario(ctx context.Context, orgID, agentID, id int64) (storage.Scenario, error)
	CreateScenarios(ctx context.Context, ss []storage.Scenario) ([]storage.Scenario, error)
	UpdateScenarios(ctx context.Context, ss []storage.Scenario) ([]storage.Scenario, error)
	DeleteScenario(ctx context.Context, orgID, agentID, id int64) error
	PromotedScenario(ctx context.Context, orgID int64, key string) (storage.Scenario, error)
}

// Agents reads the agent a scenario belongs to.
type Agents interface {
	Agent(ctx context.Context, orgID, id int64) (storage.Agent, error)
}

// Calls reads the call a scenario is promoted from and its turns.
type Calls interface {
	Call(ctx context.Context, orgID, id int64) (storage.Call, error)
	CallEvents(ctx context.Context, callIDs []int64, kinds ...string) ([]storage.CallEventRow, error)
}

// Model is the chat model that writes scenarios (llm.Provider); nil
// means none is configured and the model routes answer 503.
type Model interface {
	Stream(ctx context.Context, r llm.Request) (llm.Stream, error)
}

// Deps are the collaborators of the scenario routes.
type Deps struct {
	Store  Store
	Agents Agents
	Calls  Calls
	Model  Model
}

type handlers struct{ Deps }

// Routes returns the scenario routes of spec 4.8 (scenarios, generate,
// refresh, promote-to-scenario). Every member may use them (spec 5).
func Routes(d Deps) []api.Route {
	h := &handlers{d}
	const tag = "test-scenarios"
	base := "/v1/agents/:agent_id/test-scenarios"
	return []api.Route{
		{Method: "GET", Path: base, Summary: "List the agent's test scenarios, oldest first", Tag: tag, Auth: api.AuthOrg, ResSchema: "TestScenario", ResList: true, Errors: []int{404}, Handler: h.list},
		{Method: "POST", Path: base, Summary: "Create a manual test scenario; title and scenario_prompt required, nested objects default per spec 2.12", Tag: tag, Auth: api.AuthOrg, ReqSchema: "TestScenarioInput", ResSchema: "TestScenario", ResStatus: 201, Errors: []int{400, 404}, Handler: h.create},
		{Method: "POST", Path: base + "/generate", Summary: "Generate count (1-12, default 6) scenarios from the agent's prompt through the model; 502 and nothing saved when the model fails", Tag: tag, Auth: api.AuthOrg, ReqSchema: "GenerateScenariosInput", ResSchema: "TestScenarioList", ResStatus: 201, Errors: []int{400, 404, 502, 503}, Handler: h.generate},
		{Method: "POST", Path: base + "/refresh", Summary: "Rewrite ai/production scenarios' prompts for the agent's current prompt (scenario_ids, only_stale, or all); 502 and nothing changed when the model fails", Tag: tag, Auth: api.AuthOrg, ReqSchema: "RefreshScenariosInput", ResSchema: "TestScenarioList", Errors: []int{400, 404, 502, 503}, Handler: h.refresh},
		{Method: "GET", Path: base + "/:scenario_id", Summary: "Get a test scenario", Tag: tag, Auth: api.AuthOrg, ResSchema: "TestScenario", Errors: []int{404}, Handler: h.get},
		{Method: "PATCH", Path: base + "/:scenario_id", Summary: "Change any subset of a scenario's fields; nested objects merge key by key", Tag: tag, Auth: api.AuthOrg, ReqSchema: "TestScenarioInput", ResSchema: "TestScenario", Errors: []int{400, 404}, Handler: h.patch},
		{Method: "DELETE", Path: base + "/:scenario_id", Summary: "Delete a test scenario", Tag: tag, Auth: api.AuthOrg, ResStatus: 204, Errors: []int{404}, Handler: h.delete},
		{Method: "POST", Path: "/v1/calls/:call_id/promote-to-scenario", Summary: "Turn a call (optionally an issue and a failing agent turn) into a production scenario; 200 with the existing one on repeat", Tag: tag, Auth: api.AuthOrg, ReqSchema: "PromoteScenarioInput", ResSchema: "TestScenario", ResStatus: 201, Errors: []int{400, 404, 422, 502, 503}, Handler: h.promote},
	}
}

// PromptHash is the hash a scenario keeps of the agent prompt it was
// written for: hex SHA-256.
func PromptHash(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])
}

// agentPrompt is the prompt of the agent's deployed configuration, the
// one its calls use.
func agentPrompt(a storage.Agent) string {
	var cfg struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(a.Config, &cfg)
	return cfg.Prompt
}

// agent loads the path's agent in p's org: 404 otherwise.
func (h *handlers) agent(c fiber.Ctx, p *storage.Principal) (storage.Agent, error) {
	id, err := api.PathID(c, "agent_id")
	if err != nil {
		return storage.Agent{}, err
	}
	a, err := h.Agents.Agent(c.Context(), p.OrgID, id)
	return a, api.StoreErr(err)
}

// SettingsOf decodes a stored scenario's editable fields.
func SettingsOf(s storage.Scenario) Settings { return settings(s) }

// settings decodes a stored scenario's editable fields.
func settings(s storage.Scenario) Settings {
	out := Defaults()
	out.Title, out.ScenarioPrompt, out.Direction = s.Title, s.ScenarioPrompt, s.Direction
	_ = json.Unmarshal(s.Labels, &out.Labels)
	_ = json.Unmarshal(s.AudioConditions, &out.AudioConditions)
	_ = json.Unmarshal(s.SpeechStyle, &out.SpeechStyle)
	_ = json.Unmarshal(s.CallerBehavior, &out.CallerBehavior)
	_ = json.Unmarshal(s.Telephony, &out.Telephony)
	if out.Labels == nil {
		out.Labels = []string{}
	}
	return out
}

// store writes st's fields onto s.
func store(st Settings, s *storage.Scenario) {
	s.Title, s.ScenarioPrompt, s.Direction = st.Title, st.ScenarioPrompt, st.Direction
	s.Labels, _ = json.Marshal(st.Labels)
	s.AudioConditions, _ = json.Marshal(st.AudioConditions)
	s.SpeechStyle, _ = json.Marshal(st.SpeechStyle)
	s.CallerBehavior, _ = json.Marshal(st.CallerBehavior)
	s.Telephony, _ = json.Marshal(st.Telephony)
}

// view renders s; hash is the agent's current prompt hash (is_stale).
func view(s storage.Scenario, hash string) map[string]any {
	st := settings(s)
	return map[string]any{"id": s.ID, "agent_id": s.AgentID, "title": st.Title, "scenario_prompt": st.ScenarioPrompt, "labels": st.Labels,
		"audio_conditions": st.AudioConditions, "speech_style": st.SpeechStyle, "caller_behavior": st.CallerBehavior, "telephony": st.Telephony,
		"direction": st.Direction, "source": s.Source, "prompt_hash": s.PromptHash, "source_call_id": s.SourceCallID,
		"source_issue_trace_id": s.SourceIssueTraceID, "source_turn_index": s.SourceTurnIndex, "latest_verdict": s.LatestVerdict,
		"is_stale": stale(s, hash), "created_at": api.TS(s.CreatedAt), "updated_at": api.TS(s.UpdatedAt)}
}

// stale says whether an ai or production scenario was written for another
// prompt than the agent's current one; manual scenarios never are.
func stale(s storage.Scenario, hash string) bool {
	return s.Source != SourceManual && s.PromptHash != hash
}

func views(ss []storage.Scenario, hash string) []map[string]any {
	out := make([]map[string]any, len(ss))
	for i, s := range ss {
		out[i] = view(s, hash)
	}
	return out
}

// The scenario sources.
const (
	SourceManual     = "manual"
	SourceAI         = "ai"
	SourceProduction = "production"
)

func (h *handlers) list(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	ss, err := h.Store.Scenarios(c.Context(), p.OrgID, a.ID)
	if err != nil {
		return err
	}
	return c.JSON(views(ss, PromptHash(agentPrompt(a))))
}

// body decodes a JSON object body into its raw fields.
func body(c fiber.Ctx) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := api.Decode(c, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, api.Err(http.StatusBadRequest, "Request body must be a JSON object.")
	}
	return m, nil
}

func (h *handlers) create(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	b, err := body(c)
	if err != nil {
		return err
	}
	st := Defaults()
	f := api.Fields{}
	apply(b, &st, true, f)
	if err := f.Err(); err != nil {
		return err
	}
	sc := storage.Scenario{OrgID: p.OrgID, AgentID: a.ID, Source: SourceManual}
	store(st, &sc)
	out, err := h.Store.CreateScenarios(c.Context(), []storage.Scenario{sc})
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(view(out[0], PromptHash(agentPrompt(a))))
}

// scenario loads the path's scenario of agent a: 404 otherwise.
func (h *handlers) scenario(c fiber.Ctx, p *storage.Principal, a storage.Agent) (storage.Scenario, error) {
	id, err := api.PathID(c, "scenario_id")
	if err != nil {
		return storage.Scenario{}, err
	}
	s, err := h.Store.Scenario(c.Context(), p.OrgID, a.ID, id)
	return s, api.StoreErr(err)
}

func (h *handlers) get(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	s, err := h.scenario(c, p, a)
	if err != nil {
		return err
	}
	return c.JSON(view(s, PromptHash(agentPrompt(a))))
}

func (h *handlers) patch(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	s, err := h.scenario(c, p, a)
	if err != nil {
		return err
	}
	b, err := body(c)
	if err != nil {
		return err
	}
	st := settings(s)
	f := api.Fields{}
	apply(b, &st, false, f)
	if err := f.Err(); err != nil {
		return err
	}
	store(st, &s)
	out, err := h.Store.UpdateScenarios(c.Context(), []storage.Scenario{s})
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(view(out[0], PromptHash(agentPrompt(a))))
}

func (h *handlers) delete(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	id, err := api.PathID(c, "scenario_id")
	if err != nil {
		return err
	}
	if err := h.Store.DeleteScenario(c.Context(), p.OrgID, a.ID, id); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}
