package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Limits of the model routes (spec 4.8, 8).
const (
	MaxGenerate     = 12
	DefaultGenerate = 6
	MaxRefreshIDs   = 50
	// refreshChunk is how many scenarios one refresh request to the model
	// rewrites.
	refreshChunk = 12
	// promoteWindow is how many turns either side of a failing turn the
	// model sees; promoteTurns caps the transcript it sees otherwise (the
	// last ones).
	promoteWindow = 3
	promoteTurns  = 60
)

var localeRE = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$`)

// optBody decodes an optional JSON object body: empty is {}.
func optBody(c fiber.Ctx) (map[string]json.RawMessage, error) {
	if len(c.Body()) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	return body(c)
}

// onlyFields records every key of b outside allowed.
func onlyFields(b map[string]json.RawMessage, f api.Fields, allowed ...string) {
	for k := range b {
		if !slices.Contains(allowed, k) {
			f.Add(k, "Unknown field.")
		}
	}
}

func (h *handlers) generate(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	b, err := optBody(c)
	if err != nil {
		return err
	}
	f := api.Fields{}
	onlyFields(b, f, "count", "include_edge_cases", "locale")
	count, edge, locale := DefaultGenerate, true, "en"
	if raw, ok := b["count"]; ok {
		if json.Unmarshal(raw, &count) != nil || count < 1 || count > MaxGenerate {
			f.Add("count", fmt.Sprintf("Must be an integer from 1 to %d.", MaxGenerate))
		}
	}
	if raw, ok := b["include_edge_cases"]; ok && (json.Unmarshal(raw, &edge) != nil || string(raw) == "null") {
		f.Add("include_edge_cases", "Must be a boolean.")
	}
	if raw, ok := b["locale"]; ok && (json.Unmarshal(raw, &locale) != nil || !localeRE.MatchString(locale)) {
		f.Add("locale", `Must be a language tag such as "en" or "fr-CA".`)
	}
	if err := f.Err(); err != nil {
		return err
	}
	if h.Model == nil {
		return errNoModel
	}
	prompt := agentPrompt(a)
	reply, err := ask(c.Context(), h.Model, generateSystem, generateUser(prompt, count, edge, locale))
	if err != nil {
		return errModel
	}
	var out struct {
		Scenarios []json.RawMessage `json:"scenarios"`
	}
	if replyJSON(reply, &out) != nil {
		return errModel
	}
	hash := PromptHash(prompt)
	var ss []storage.Scenario
	for _, raw := range out.Scenarios {
		var ms modelScenario
		if json.Unmarshal(raw, &ms) != nil {
			continue
		}
		st, ok := ms.normalize()
		if !ok {
			continue
		}
		sc := storage.Scenario{OrgID: p.OrgID, AgentID: a.ID, Source: SourceAI, PromptHash: hash}
		store(st, &sc)
		ss = append(ss, sc)
		if len(ss) == count {
			break
		}
	}
	if len(ss) == 0 {
		return errModel
	}
	saved, err := h.Store.CreateScenarios(c.Context(), ss)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(map[string]any{"scenarios": views(saved, hash)})
}

func (h *handlers) refresh(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	b, err := optBody(c)
	if err != nil {
		return err
	}
	f := api.Fields{}
	onlyFields(b, f, "scenario_ids", "only_stale")
	var ids []int64
	idsSet := false
	if raw, ok := b["scenario_ids"]; ok && string(raw) != "null" {
		idsSet = true
		if json.Unmarshal(raw, &ids) != nil {
			f.Add("scenario_ids", "Must be a list of scenario ids.")
		} else if len(ids) > MaxRefreshIDs {
			f.Add("scenario_ids", fmt.Sprintf("At most %d scenario ids.", MaxRefreshIDs))
		}
	}
	onlyStale := false
	if raw, ok := b["only_stale"]; ok && (json.Unmarshal(raw, &onlyStale) != nil || string(raw) == "null") {
		f.Add("only_stale", "Must be a boolean.")
	}
	if err := f.Err(); err != nil {
		return err
	}
	all, err := h.Store.Scenarios(c.Context(), p.OrgID, a.ID)
	if err != nil {
		return err
	}
	prompt := agentPrompt(a)
	hash := PromptHash(prompt)
	var todo []storage.Scenario
	if idsSet {
		for _, id := range ids {
			i := slices.IndexFunc(all, func(s storage.Scenario) bool { return s.ID == id })
			switch {
			case i < 0:
				f.Add("scenario_ids", "Scenario "+strconv.FormatInt(id, 10)+" is not one of this agent's scenarios.")
			case all[i].Source == SourceManual:
				f.Add("scenario_ids", "Scenario "+strconv.FormatInt(id, 10)+" is manual; refresh rewrites only ai and production scenarios.")
			case !slices.ContainsFunc(todo, func(s storage.Scenario) bool { return s.ID == id }):
				todo = append(todo, all[i])
			}
		}
		if err := f.Err(); err != nil {
			return err
		}
	} else {
		for _, s := range all {
			if s.Source != SourceManual {
				todo = append(todo, s)
			}
		}
	}
	if onlyStale {
		todo = slices.DeleteFunc(todo, func(s storage.Scenario) bool { return !stale(s, hash) })
	}
	if len(todo) == 0 {
		return c.JSON(map[string]any{"scenarios": []any{}})
	}
	if h.Model == nil {
		return errNoModel
	}
	// Every chunk is rewritten before anything is saved: a failure on the
	// last leaves every scenario as it was.
	for start := 0; start < len(todo); start += refreshChunk {
		chunk := todo[start:min(start+refreshChunk, len(todo))]
		if err := h.rewrite(c, prompt, chunk); err != nil {
			return err
		}
	}
	for i := range todo {
		todo[i].PromptHash = hash
	}
	saved, err := h.Store.UpdateScenarios(c.Context(), todo)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(map[string]any{"scenarios": views(saved, hash)})
}

// rewrite asks the model for new titles and prompts of chunk and sets
// them; every scenario must come back with a usable prompt, else 502.
func (h *handlers) rewrite(c fiber.Ctx, prompt string, chunk []storage.Scenario) error {
	items := make([]refreshItem, len(chunk))
	for i, s := range chunk {
		items[i] = refreshItem{ID: s.ID, Title: s.Title, ScenarioPrompt: s.ScenarioPrompt}
	}
	reply, err := ask(c.Context(), h.Model, refreshSystem, refreshUser(prompt, items))
	if err != nil {
		return errModel
	}
	var out struct {
		Scenarios []modelScenario `json:"scenarios"`
	}
	if replyJSON(reply, &out) != nil {
		return errModel
	}
	got := map[int64]modelScenario{}
	for _, ms := range out.Scenarios {
		var id int64
		if json.Unmarshal(ms.ID, &id) == nil {
			got[id] = ms
		}
	}
	for i := range chunk {
		ms, ok := got[chunk[i].ID]
		title, text := clip(text(ms.Title), MaxTitle), clip(text(ms.ScenarioPrompt), MaxPrompt)
		if !ok || text == "" {
			return errModel
		}
		if title != "" {
			chunk[i].Title = title
		}
		chunk[i].ScenarioPrompt = text
	}
	return nil
}

// turn is one transcript turn with its index in the whole transcript.
type turn struct {
	Index int
	Role  string
	Text  string
}

// turnEvent is the part of a stored turn event promote reads
// (calls.EventData).
type turnEvent struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

func (h *handlers) promote(c fiber.Ctx, p *storage.Principal) error {
	callID, err := api.PathID(c, "call_id")
	if err != nil {
		return err
	}
	call, err := h.Calls.Call(c.Context(), p.OrgID, callID)
	if err != nil {
		return api.StoreErr(err)
	}
	b, err := optBody(c)
	if err != nil {
		return err
	}
	f := api.Fields{}
	onlyFields(b, f, "issue_trace_id", "failing_turn_index")
	var trace *string
	if raw, ok := b["issue_trace_id"]; ok && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) != nil || !api.IsUUID(s) {
			f.Add("issue_trace_id", "Must be a UUID.")
		}
		s = strings.ToLower(s)
		trace = &s
	}
	var index *int64
	if raw, ok := b["failing_turn_index"]; ok && string(raw) != "null" {
		var i int64
		if json.Unmarshal(raw, &i) != nil || i < 0 {
			f.Add("failing_turn_index", "Must be an integer of at least 0.")
		}
		index = &i
	}
	if err := f.Err(); err != nil {
		return err
	}
	events, err := h.Calls.CallEvents(c.Context(), []int64{call.ID}, "turn")
	if err != nil {
		return err
	}
	var turns []turn
	for _, e := range events {
		var t turnEvent
		if json.Unmarshal(e.Data, &t) == nil {
			turns = append(turns, turn{Index: len(turns), Role: t.Role, Text: t.Text})
		}
	}
	if index != nil {
		switch {
		case len(turns) == 0:
			return api.FieldErr("failing_turn_index", "Out of range: the call's transcript has no turns.")
		case *index >= int64(len(turns)):
			return api.FieldErr("failing_turn_index", fmt.Sprintf("Out of range: the call's transcript has %d turns (0 to %d).", len(turns), len(turns)-1))
		case turns[*index].Role != "assistant":
			return api.FieldErr("failing_turn_index", fmt.Sprintf("Turn %d is the caller's; give the index of an agent turn.", *index))
		}
	}
	key := strconv.FormatInt(call.ID, 10) + "/"
	if trace != nil {
		key += *trace
	}
	if s, err := h.Store.PromotedScenario(c.Context(), p.OrgID, key); err == nil {
		return h.existing(c, p, s)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if call.AgentID == nil {
		return api.Err(http.StatusUnprocessableEntity, "The call has no agent, so it cannot become an agent's test scenario.")
	}
	a, err := h.Agents.Agent(c.Context(), p.OrgID, *call.AgentID)
	if errors.Is(err, storage.ErrNotFound) {
		return api.Err(http.StatusUnprocessableEntity, "The call's agent no longer exists.")
	} else if err != nil {
		return err
	}
	if len(turns) == 0 {
		return api.Err(http.StatusUnprocessableEntity, "The call has no transcript to build a scenario from.")
	}
	focus, window := -1, turns
	if index != nil {
		focus = int(*index)
		window = turns[max(focus-promoteWindow, 0):min(focus+promoteWindow+1, len(turns))]
	} else if len(turns) > promoteTurns {
		window = turns[len(turns)-promoteTurns:]
	}
	if h.Model == nil {
		return errNoModel
	}
	prompt := agentPrompt(a)
	issue := ""
	if trace != nil {
		issue = *trace
	}
	reply, err := ask(c.Context(), h.Model, promoteSystem, promoteUser(prompt, window, focus, issue))
	if err != nil {
		return errModel
	}
	var out struct {
		Scenario modelScenario `json:"scenario"`
	}
	if replyJSON(reply, &out) != nil {
		return errModel
	}
	st, ok := out.Scenario.normalize()
	if !ok {
		return errModel
	}
	sc := storage.Scenario{OrgID: p.OrgID, AgentID: a.ID, Source: SourceProduction, PromptHash: PromptHash(prompt),
		SourceCallID: &call.ID, SourceIssueTraceID: trace, SourceTurnIndex: index, PromoteKey: &key}
	store(st, &sc)
	saved, err := h.Store.CreateScenarios(c.Context(), []storage.Scenario{sc})
	if errors.Is(err, storage.ErrConflict) { // promoted concurrently
		s, err := h.Store.PromotedScenario(c.Context(), p.OrgID, key)
		if err != nil {
			return err
		}
		return h.existing(c, p, s)
	}
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(view(saved[0], PromptHash(prompt)))
}

// existing answers a repeated promotion with the scenario it made.
func (h *handlers) existing(c fiber.Ctx, p *storage.Principal, s storage.Scenario) error {
	hash := ""
	if a, err := h.Agents.Agent(c.Context(), p.OrgID, s.AgentID); err == nil {
		hash = PromptHash(agentPrompt(a))
	}
	return c.JSON(view(s, hash))
}
