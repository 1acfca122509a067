package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// SuiteStore is what the suite and test-run routes need from storage.
type SuiteStore interface {
	Suites(ctx context.Context, orgID int64) ([]storage.Suite, error)
	Suite(ctx context.Context, orgID int64, id string) (storage.Suite, error)
	CreateSuite(ctx context.Context, s storage.Suite) (storage.Suite, error)
	UpdateSuite(ctx context.Context, s storage.Suite) (storage.Suite, error)
	DeleteSuite(ctx context.Context, orgID int64, id string) error
}

// RunStore reads test runs.
type RunStore interface {
	TestRuns(ctx context.Context, orgID, agentID int64, limit, offset int) ([]storage.TestRun, error)
	TestRun(ctx context.Context, orgID, agentID, id int64) (storage.TestRun, error)
	SuiteRuns(ctx context.Context, orgID int64, suiteID string, limit int) ([]storage.TestRun, error)
	SuiteRunsPage(ctx context.Context, orgID int64, suiteID string, limit, offset int) ([]storage.TestRun, error)
	SuiteRun(ctx context.Context, orgID int64, suiteID string, id int64) (storage.TestRun, error)
}

// Numbers checks a suite's phone number.
type Numbers interface {
	PhoneNumber(ctx context.Context, orgID, id int64) (storage.PhoneNumber, error)
}

// SuiteDeps are the collaborators of the suite and test-run routes.
type SuiteDeps struct {
	Suites    SuiteStore
	Runs      RunStore
	Scenarios Store
	Agents    Agents
	Numbers   Numbers
	// Settle, when set, finishes test run id if all its runs have ended
	// (marking lost ones failed first): the read routes call it for test
	// runs still in progress, so one whose last run's end was lost still
	// gets its verdicts.
	Settle func(ctx context.Context, orgID, testRunID int64) error
	// Now is the schedule's clock (nil: time.Now): next_run_at is set
	// from it, and the scheduler (simulations.Scheduler) reads the same.
	Now func() time.Time
}

// Limits of suites and test runs.
const (
	MaxSuiteName     = 120
	MaxSuiteDesc     = 2000
	MaxSuiteIDs      = 50
	SuiteDetailRuns  = 50
	DefaultRunsLimit = 50
	MaxRunsLimit     = 200
)

// Schedules are a suite's schedule values; none runs it only on demand.
var Schedules = []string{"none", "hourly", "daily", "weekly"}

// SchedulePeriod is the time between a schedule's runs (0 for none).
func SchedulePeriod(schedule string) time.Duration {
	switch schedule {
	case "hourly":
		return time.Hour
	case "daily":
		return 24 * time.Hour
	case "weekly":
		return 7 * 24 * time.Hour
	}
	return 0
}

// Channels are the channels a suite's runs call the agent over.
var Channels = []string{"web", "telephony"}

type suites struct{ SuiteDeps }

// SuiteRoutes returns /v1/suites and the agent's test-run reads (spec
// 4.8); execute comes with simulations.
func SuiteRoutes(d SuiteDeps) []api.Route {
	h := &suites{d}
	const tag = "test-suites"
	return []api.Route{
		{Method: "GET", Path: "/v1/suites", Summary: "List suites, newest first", Tag: tag, Auth: api.AuthOrg, ResSchema: "Suite", ResList: true, Handler: h.list},
		{Method: "POST", Path: "/v1/suites", Summary: "Create a suite: name and agent_id required; min_pass_rate is a fraction 0-1 (default 1)", Tag: tag, Auth: api.AuthOrg, ReqSchema: "SuiteInput", ResSchema: "Suite", ResStatus: 201, Errors: []int{400}, Handler: h.create},
		{Method: "GET", Path: "/v1/suites/:suite_id", Summary: "Get a suite with its 50 most recent runs", Tag: tag, Auth: api.AuthOrg, ResSchema: "Suite", Errors: []int{404}, Handler: h.get},
		{Method: "PATCH", Path: "/v1/suites/:suite_id", Summary: "Change any subset of a suite's fields", Tag: tag, Auth: api.AuthOrg, ReqSchema: "SuiteInput", ResSchema: "Suite", Errors: []int{400, 404}, Handler: h.patch},
		{Method: "DELETE", Path: "/v1/suites/:suite_id", Summary: "Delete a suite; its runs stay in the agent's test runs", Tag: tag, Auth: api.AuthOrg, ResStatus: 204, Errors: []int{404}, Handler: h.delete},
		{Method: "GET", Path: "/v1/suites/:suite_id/runs", Summary: "The suite's runs (manual and scheduled), newest first, without per-run details; limit default 50, max 200, offset", Tag: tag, Auth: api.AuthOrg, ResSchema: "TestRun", ResList: true, Errors: []int{400, 404}, Handler: h.suiteRuns},
		{Method: "GET", Path: "/v1/suites/:suite_id/runs/:run_id", Summary: "One run of the suite with its runs array, verdict_reason and regressions", Tag: tag, Auth: api.AuthOrg, ResSchema: "TestRun", Errors: []int{404}, Handler: h.suiteRun},
		{Method: "GET", Path: "/v1/agents/:agent_id/test-runs", Summary: "The agent's test runs, newest first, without per-run details; limit default 50, max 200", Tag: "test-runs", Auth: api.AuthOrg, ResSchema: "TestRun", ResList: true, Errors: []int{400, 404}, Handler: h.runs},
		{Method: "GET", Path: "/v1/agents/:agent_id/test-runs/:batch_id", Summary: "A test run with its runs array", Tag: "test-runs", Auth: api.AuthOrg, ResSchema: "TestRun", Errors: []int{404}, Handler: h.run},
	}
}

func suiteView(s storage.Suite) map[string]any {
	return map[string]any{"id": s.ID, "agent_id": s.AgentID, "name": s.Name, "description": s.Description, "scenario_ids": api.NonNil(s.ScenarioIDs),
		"min_pass_rate": s.MinPassRate, "no_critical_failures": s.NoCriticalFailures, "schedule": s.Schedule, "channel": s.Channel,
		"phone_number_id": s.PhoneNumberID, "enabled": s.Enabled, "next_run_at": api.TSPtr(s.NextRunAt), "created_at": api.TS(s.CreatedAt), "updated_at": api.TS(s.UpdatedAt)}
}

// TestRunView is the test-run object; detail adds its runs array.
func TestRunView(r storage.TestRun, detail bool) map[string]any { return runView(r, detail) }

// runView renders a test run; detail adds its runs array.
func runView(r storage.TestRun, detail bool) map[string]any {
	v := map[string]any{"id": r.ID, "agent_id": r.AgentID, "suite_id": r.SuiteID, "status": r.Status, "channel": r.Channel, "verdict": r.Verdict,
		"total_count": r.TotalCount, "pass_count": r.PassCount, "fail_count": r.FailCount, "pass_rate": r.PassRate, "prompt_hash": r.PromptHash,
		"regressions": r.Regressions, "created_at": api.TS(r.CreatedAt), "completed_at": api.TSPtr(r.CompletedAt),
		"trigger": "manual", "scheduled_for": api.TSPtr(r.ScheduledFor), "error_message": r.ErrorMessage, "verdict_reason": r.VerdictReason,
		"critical_failure_count": r.CriticalFailureCount, "baseline_run_id": r.BaselineID}
	if r.ScheduledFor != nil {
		v["trigger"] = "schedule"
	}
	if detail {
		v["runs"] = r.Runs
	}
	return v
}

func (h *suites) list(c fiber.Ctx, p *storage.Principal) error {
	ss, err := h.Suites.Suites(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(ss))
	for i, s := range ss {
		out[i] = suiteView(s)
	}
	return c.JSON(out)
}

var suiteFields = []string{"name", "description", "agent_id", "scenario_ids", "min_pass_rate", "no_critical_failures", "schedule", "channel", "phone_number_id", "enabled"}

// apply validates b onto s (create requires name and agent_id) and checks
// the references: the agent, its scenarios and the phone number must be
// the org's.
func (h *suites) apply(ctx context.Context, b map[string]json.RawMessage, s *storage.Suite, create bool) error {
	prev := *s
	f := api.Fields{}
	for k := range b {
		if !slices.Contains(suiteFields, k) {
			f.Add(k, "Unknown field.")
		}
	}
	if raw, ok := b["name"]; ok || create {
		var v *string
		if ok && json.Unmarshal(raw, &v) != nil {
			f.Add("name", "Must be a string.")
		} else {
			s.Name = f.Name("name", v, true, MaxSuiteName)
		}
	}
	if raw, ok := b["description"]; ok {
		if json.Unmarshal(raw, &s.Description) != nil || string(raw) == "null" {
			f.Add("description", "Must be a string.")
		} else if msg := api.TooLong(s.Description, MaxSuiteDesc); msg != "" {
			f.Add("description", msg)
		}
	}
	if raw, ok := b["agent_id"]; ok || create {
		if !ok {
			f.Add("agent_id", "This field is required.")
		} else if json.Unmarshal(raw, &s.AgentID) != nil || s.AgentID <= 0 {
			f.Add("agent_id", "Must be an agent id.")
		} else if _, err := h.Agents.Agent(ctx, s.OrgID, s.AgentID); errors.Is(err, storage.ErrNotFound) {
			f.Add("agent_id", "No such agent in this organization.")
		} else if err != nil {
			return err
		}
	}
	if raw, ok := b["scenario_ids"]; ok {
		if json.Unmarshal(raw, &s.ScenarioIDs) != nil || string(raw) == "null" {
			f.Add("scenario_ids", "Must be a list of scenario ids.")
		} else if len(s.ScenarioIDs) > MaxSuiteIDs {
			f.Add("scenario_ids", fmt.Sprintf("At most %d scenario ids.", MaxSuiteIDs))
		}
	}
	if raw, ok := b["min_pass_rate"]; ok {
		if json.Unmarshal(raw, &s.MinPassRate) != nil || string(raw) == "null" || s.MinPassRate < 0 || s.MinPassRate > 1 {
			f.Add("min_pass_rate", "Must be a fraction from 0 to 1 (0.8 means 80% of runs pass).")
		}
	}
	if raw, ok := b["no_critical_failures"]; ok && (json.Unmarshal(raw, &s.NoCriticalFailures) != nil || string(raw) == "null") {
		f.Add("no_critical_failures", "Must be a boolean.")
	}
	if raw, ok := b["enabled"]; ok && (json.Unmarshal(raw, &s.Enabled) != nil || string(raw) == "null") {
		f.Add("enabled", "Must be a boolean.")
	}
	enum := func(name string, dst *string, allowed []string) {
		if raw, ok := b[name]; ok {
			if json.Unmarshal(raw, dst) != nil || string(raw) == "null" {
				f.Add(name, "Must be a string.")
			} else if msg := api.OneOf(*dst, allowed); msg != "" {
				f.Add(name, msg)
			}
		}
	}
	enum("schedule", &s.Schedule, Schedules)
	enum("channel", &s.Channel, Channels)
	if raw, ok := b["phone_number_id"]; ok {
		if string(raw) == "null" {
			s.PhoneNumberID = nil
		} else if v := int64(0); json.Unmarshal(raw, &v) != nil || v <= 0 {
			f.Add("phone_number_id", "Must be a phone number id or null.")
		} else if _, err := h.Numbers.PhoneNumber(ctx, s.OrgID, v); errors.Is(err, storage.ErrNotFound) {
			f.Add("phone_number_id", "No such phone number in this organization.")
		} else if err != nil {
			return err
		} else {
			s.PhoneNumberID = &v
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	if s.Channel == "telephony" && s.PhoneNumberID == nil {
		f.Add("phone_number_id", "Required when the channel is telephony.")
	}
	if len(s.ScenarioIDs) > 0 {
		have, err := h.Scenarios.Scenarios(ctx, s.OrgID, s.AgentID)
		if err != nil {
			return err
		}
		var missing []string
		for _, id := range s.ScenarioIDs {
			if !slices.ContainsFunc(have, func(sc storage.Scenario) bool { return sc.ID == id }) {
				missing = append(missing, strconv.FormatInt(id, 10))
			}
		}
		if len(missing) > 0 {
			f.Add("scenario_ids", "Not scenarios of agent "+strconv.FormatInt(s.AgentID, 10)+": "+strings.Join(missing, ", ")+".")
		}
		s.ScenarioIDs = dedupe(s.ScenarioIDs)
	}
	if err := f.Err(); err != nil {
		return err
	}
	h.reschedule(s, prev, create)
	return nil
}

// reschedule sets s.NextRunAt: none while the schedule is none or the
// suite disabled; one period from now when the suite is created with a
// schedule, the schedule changes or the suite is enabled again; else it
// stays (editing other fields does not move the schedule).
func (h *suites) reschedule(s *storage.Suite, prev storage.Suite, create bool) {
	p := SchedulePeriod(s.Schedule)
	switch {
	case p == 0 || !s.Enabled:
		s.NextRunAt = nil
	case create || s.Schedule != prev.Schedule || !prev.Enabled || s.NextRunAt == nil:
		now := time.Now
		if h.Now != nil {
			now = h.Now
		}
		next := now().Add(p)
		s.NextRunAt = &next
	}
}

func dedupe(ids []int64) []int64 {
	out := []int64{}
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func (h *suites) create(c fiber.Ctx, p *storage.Principal) error {
	b, err := body(c)
	if err != nil {
		return err
	}
	s := storage.Suite{OrgID: p.OrgID, ScenarioIDs: []int64{}, MinPassRate: 1, Schedule: "none", Channel: "web", Enabled: true}
	if err := h.apply(c.Context(), b, &s, true); err != nil {
		return err
	}
	s, err = h.Suites.CreateSuite(c.Context(), s)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(suiteView(s))
}

func (h *suites) load(c fiber.Ctx, p *storage.Principal) (storage.Suite, error) {
	id := strings.ToLower(c.Params("suite_id"))
	if !api.IsUUID(id) {
		return storage.Suite{}, api.ErrNotFound
	}
	s, err := h.Suites.Suite(c.Context(), p.OrgID, id)
	return s, api.StoreErr(err)
}

func (h *suites) get(c fiber.Ctx, p *storage.Principal) error {
	s, err := h.load(c, p)
	if err != nil {
		return err
	}
	rs, err := h.Runs.SuiteRuns(c.Context(), p.OrgID, s.ID, SuiteDetailRuns)
	if err != nil {
		return err
	}
	runs := make([]map[string]any, len(rs))
	for i, r := range rs {
		runs[i] = runView(r, false)
	}
	v := suiteView(s)
	v["runs"] = runs
	return c.JSON(v)
}

func (h *suites) patch(c fiber.Ctx, p *storage.Principal) error {
	s, err := h.load(c, p)
	if err != nil {
		return err
	}
	b, err := body(c)
	if err != nil {
		return err
	}
	if err := h.apply(c.Context(), b, &s, false); err != nil {
		return err
	}
	s, err = h.Suites.UpdateSuite(c.Context(), s)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(suiteView(s))
}

func (h *suites) delete(c fiber.Ctx, p *storage.Principal) error {
	s, err := h.load(c, p)
	if err != nil {
		return err
	}
	if err := h.Suites.DeleteSuite(c.Context(), p.OrgID, s.ID); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (h *suites) agent(c fiber.Ctx, p *storage.Principal) (storage.Agent, error) {
	id, err := api.PathID(c, "agent_id")
	if err != nil {
		return storage.Agent{}, err
	}
	a, err := h.Agents.Agent(c.Context(), p.OrgID, id)
	return a, api.StoreErr(err)
}

func (h *suites) runs(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	limit, err := api.QueryLimit(c, DefaultRunsLimit, MaxRunsLimit)
	if err != nil {
		return err
	}
	offset, err := api.QueryOffset(c)
	if err != nil {
		return err
	}
	rs, err := h.Runs.TestRuns(c.Context(), p.OrgID, a.ID, limit, offset)
	if err != nil {
		return err
	}
	return h.listRuns(c, rs)
}

func (h *suites) run(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.agent(c, p)
	if err != nil {
		return err
	}
	id, err := api.PathID(c, "batch_id")
	if err != nil {
		return err
	}
	r, err := h.Runs.TestRun(c.Context(), p.OrgID, a.ID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	return h.showRun(c, r)
}

// listRuns answers with the list view of rs, each settled first.
func (h *suites) listRuns(c fiber.Ctx, rs []storage.TestRun) error {
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		r, err := h.settle(c.Context(), r)
		if err != nil {
			return err
		}
		out[i] = runView(r, false)
	}
	return c.JSON(out)
}

// showRun answers with the detail view of r, settled first.
func (h *suites) showRun(c fiber.Ctx, r storage.TestRun) error {
	r, err := h.settle(c.Context(), r)
	if err != nil {
		return err
	}
	return c.JSON(runView(r, true))
}

// settle finishes r if it is in progress and all its runs have ended,
// and returns it as it is now.
func (h *suites) settle(ctx context.Context, r storage.TestRun) (storage.TestRun, error) {
	if h.Settle == nil || r.Status != "in_progress" {
		return r, nil
	}
	if err := h.Settle(ctx, r.OrgID, r.ID); err != nil {
		return r, err
	}
	return h.Runs.TestRun(ctx, r.OrgID, r.AgentID, r.ID)
}

func (h *suites) suiteRuns(c fiber.Ctx, p *storage.Principal) error {
	s, err := h.load(c, p)
	if err != nil {
		return err
	}
	limit, err := api.QueryLimit(c, DefaultRunsLimit, MaxRunsLimit)
	if err != nil {
		return err
	}
	offset, err := api.QueryOffset(c)
	if err != nil {
		return err
	}
	rs, err := h.Runs.SuiteRunsPage(c.Context(), p.OrgID, s.ID, limit, offset)
	if err != nil {
		return err
	}
	return h.listRuns(c, rs)
}

func (h *suites) suiteRun(c fiber.Ctx, p *storage.Principal) error {
	s, err := h.load(c, p)
	if err != nil {
		return err
	}
	id, err := api.PathID(c, "run_id")
	if err != nil {
		return err
	}
	r, err := h.Runs.SuiteRun(c.Context(), p.OrgID, s.ID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	return h.showRun(c, r)
}
