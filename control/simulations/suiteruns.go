package simulations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/scenarios"
	"github.com/voiced/voiced/storage"
)

// Suite runs (spec 4.8 leaves their routes open; docs/decisions.md
// "Suite runs, schedules and regressions"): a suite run is a test run
// with suite_id set, started by POST /v1/suites/{id}/run or by the
// suite's schedule (Scheduler), over the suite's channel and number,
// once per scenario (no matrix). Its verdict is the suite's rule
// (SuiteVerdict) and its regressions are against the baseline run.

// SuiteRunRoutes is POST /v1/suites/{suite_id}/run; the suite-run reads
// are scenarios.SuiteRoutes'.
func SuiteRunRoutes(d TestRunDeps) []api.Route {
	h := &testRuns{d}
	return []api.Route{{Method: "POST", Path: "/v1/suites/:suite_id/run", Summary: "Run a suite now: its scenarios (or all the agent's) once each over its channel and number, as a test run with suite_id; consent_to_charge must be true; runs a disabled suite too",
		Tag: "test-suites", Auth: api.AuthOrg, ReqSchema: "SuiteRunInput", ResSchema: "TestRun", ResStatus: 201, Errors: []int{400, 402, 404, 422, 429, 502}, Handler: h.runSuite}}
}

type suiteRunInput struct {
	StaggerSeconds  *int  `json:"stagger_seconds"`
	ConsentToCharge *bool `json:"consent_to_charge"`
}

func (h *testRuns) runSuite(c fiber.Ctx, p *storage.Principal) error {
	ctx := c.Context()
	id := strings.ToLower(c.Params("suite_id"))
	if !api.IsUUID(id) {
		return api.ErrNotFound
	}
	su, err := h.Scenarios.Suite(ctx, p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	var in suiteRunInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	stagger := staggerAndConsent(f, in.StaggerSeconds, in.ConsentToCharge, "suite runs")
	if err := f.Err(); err != nil {
		return err
	}
	tr, err := h.StartSuite(ctx, su, stagger, requester(p), nil)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(scenarios.TestRunView(tr, true))
}

// StartSuite starts a run of suite su (ScheduledFor: the schedule slot it
// is for, nil on request); errors as Start's, plus 404 when the suite's
// agent is gone.
func (d TestRunDeps) StartSuite(ctx context.Context, su storage.Suite, stagger int, requestedBy *int64, slot *time.Time) (storage.TestRun, error) {
	a, err := d.Agents.Agent(ctx, su.OrgID, su.AgentID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.TestRun{}, api.Err(http.StatusNotFound, "The suite's agent no longer exists.")
	}
	if err != nil {
		return storage.TestRun{}, err
	}
	var ids []int64
	if len(su.ScenarioIDs) > 0 {
		ids = su.ScenarioIDs
	}
	id := su.ID
	return d.Start(ctx, Start{OrgID: su.OrgID, Agent: a, Channel: su.Channel, PhoneNumberID: su.PhoneNumberID, ScenarioIDs: ids,
		Stagger: stagger, RequestedBy: requestedBy, SuiteID: &id, ScheduledFor: slot})
}

// SuiteVerdict is the suite rule over a finished suite run: with pass
// and fail the runs judged so (the rest unknown) out of total, and
// critical the runs whose call has a critical issue report. A run with
// nothing judged (every call failed to start or went ungraded) is
// unknown: the harness failed, not the agent. Otherwise it passes when
// the pass rate (passes over all runs, unknowns counting against) is at
// least minPassRate and, when noCritical, no run had a critical issue;
// reason says which held or failed.
func SuiteVerdict(pass, fail, total, critical int64, minPassRate float64, noCritical bool) (verdict, reason string) {
	if total == 0 || pass+fail == 0 {
		return "unknown", "No run was judged: the calls did not start, failed before the agent, or went ungraded."
	}
	rate := float64(pass) / float64(total)
	var why []string
	// A small tolerance: 4 of 5 is 0.8 whatever the float rounding.
	if rate+1e-9 < minPassRate {
		why = append(why, fmt.Sprintf("pass rate %.2f (%d of %d) is below min_pass_rate %.2f", rate, pass, total, minPassRate))
	}
	if noCritical && critical > 0 {
		why = append(why, fmt.Sprintf("%d run(s) had a critical-severity issue and no_critical_failures is on", critical))
	}
	if len(why) > 0 {
		return "fail", capital(strings.Join(why, "; ")) + "."
	}
	reason = fmt.Sprintf("Pass rate %.2f (%d of %d) reaches min_pass_rate %.2f", rate, pass, total, minPassRate)
	if noCritical {
		reason += " and no run had a critical-severity issue"
	}
	return "pass", reason + "."
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Regression is one entry of a suite run's regressions: a scenario that
// passed in the baseline run and fails now.
type Regression struct {
	ScenarioID int64  `json:"scenario_id"`
	Previous   string `json:"previous"`
	Current    string `json:"current"`
}

// Regressions compares the per-scenario verdicts of a run with its
// baseline's: every scenario pass there and fail here, by scenario id.
// Scenarios in only one of them, and changes to or from unknown, are
// not regressions.
func Regressions(baseline, current map[int64]string) []Regression {
	out := []Regression{}
	for id, v := range current {
		if v == "fail" && baseline[id] == "pass" {
			out = append(out, Regression{ScenarioID: id, Previous: "pass", Current: "fail"})
		}
	}
	slices.SortFunc(out, func(a, b Regression) int { return int(a.ScenarioID - b.ScenarioID) })
	return out
}

// scenarioVerdicts are the per-scenario verdicts of a test run's runs
// array.
func scenarioVerdicts(runs json.RawMessage) map[int64]string {
	var items []runItem
	_ = json.Unmarshal(runs, &items)
	by := map[int64][]runItem{}
	for _, it := range items {
		if it.ScenarioID != nil {
			by[*it.ScenarioID] = append(by[*it.ScenarioID], it)
		}
	}
	out := map[int64]string{}
	for id, its := range by {
		out[id] = combine(its)
	}
	return out
}

// suiteRule sets a suite run's verdict, reason, baseline and regressions
// on tr (its counts and runs set); a test run outside a suite keeps the
// plain verdict.
func (d TestRunDeps) suiteRule(ctx context.Context, tr *storage.TestRun, current map[int64]string) error {
	tr.Regressions = json.RawMessage("[]")
	row, err := d.Scenarios.TestRunByID(ctx, tr.OrgID, tr.ID)
	if err != nil || row.SuiteID == nil {
		return err
	}
	su, err := d.Scenarios.Suite(ctx, tr.OrgID, *row.SuiteID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	tr.Verdict, tr.VerdictReason = SuiteVerdict(tr.PassCount, tr.FailCount, tr.TotalCount, tr.CriticalFailureCount, su.MinPassRate, su.NoCriticalFailures)
	base, err := d.Scenarios.BaselineRun(ctx, tr.OrgID, su.ID, tr.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	tr.BaselineID = &base.ID
	tr.Regressions, _ = json.Marshal(Regressions(scenarioVerdicts(base.Runs), current))
	return nil
}
