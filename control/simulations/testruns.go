package simulations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/scenarios"
	"github.com/voiced/voiced/storage"
)

// Caller is the simulated caller's settings of a run: a scenario's
// nested objects merged with one matrix combination (spec 2.12). A plain
// 4.7 run has the zero Caller: the defaults.
type Caller struct {
	NoiseAsset         string `json:"noise_asset,omitempty"`
	SNRdB              *int   `json:"snr_db,omitempty"`
	Pace               string `json:"pace,omitempty"`
	Disfluencies       string `json:"disfluencies,omitempty"`
	Accent             string `json:"accent,omitempty"`
	LongSilenceSeconds int    `json:"long_silence_seconds,omitempty"`
	DTMFSequence       string `json:"dtmf_sequence,omitempty"`
	TopicChange        string `json:"topic_change,omitempty"`
	VoicemailAnswer    bool   `json:"voicemail_answer,omitempty"`
}

// callerOf is the caller of scenario settings st.
func callerOf(st scenarios.Settings) Caller {
	return Caller{NoiseAsset: st.AudioConditions.NoiseAsset, SNRdB: st.AudioConditions.SNRdB, Pace: st.SpeechStyle.Pace,
		Disfluencies: st.SpeechStyle.Disfluencies, Accent: st.SpeechStyle.Accent, LongSilenceSeconds: st.CallerBehavior.LongSilenceSeconds,
		DTMFSequence: st.CallerBehavior.DTMFSequence, TopicChange: st.CallerBehavior.TopicChange, VoicemailAnswer: st.Telephony.VoicemailAnswer}
}

// Test-run limits (spec 4.8; MaxExpanded is a decision, see
// docs/decisions.md).
const (
	// MaxExecuteScenarios bounds scenario_ids.
	MaxExecuteScenarios = 50
	// MaxExpanded is the most runs one execute may expand to (scenarios
	// times matrix combinations): 400 above it.
	MaxExpanded = 200
)

// MatrixAxes are the matrix axes, in expansion order, with their caps.
var MatrixAxes = []struct {
	Name string
	Max  int
}{{"audio_conditions", 5}, {"speech_style", 7}, {"caller_behavior", 8}, {"telephony", 2}}

// TestRunDeps are the collaborators of execute and of the test-run
// verdicts.
type TestRunDeps struct {
	Deps
	Scenarios ScenarioReader
}

// ScenarioReader reads the scenarios a test run expands, and the suite
// and baseline a suite run's verdict needs (storage.ScenarioStore).
type ScenarioReader interface {
	Scenarios(ctx context.Context, orgID, agentID int64) ([]storage.Scenario, error)
	TestRunByID(ctx context.Context, orgID, id int64) (storage.TestRun, error)
	Suite(ctx context.Context, orgID int64, id string) (storage.Suite, error)
	BaselineRun(ctx context.Context, orgID int64, suiteID string, id int64) (storage.TestRun, error)
}

// GradeWait bounds how long a test run's verdicts wait for the grades
// still pending on its calls.
const GradeWait = 2 * time.Minute

// TestRunStore is what test runs need of the simulation store.
type TestRunStore interface {
	CreateTestRunSimulations(ctx context.Context, tr storage.TestRun, runs []storage.SimulationRun, limit int, runsJSON func([]storage.SimulationRun) json.RawMessage) (storage.TestRun, []storage.SimulationRun, error)
	TestRunSimulations(ctx context.Context, orgID, testRunID int64) ([]storage.SimulationRun, error)
	FinishTestRun(ctx context.Context, tr storage.TestRun, scenarioVerdicts map[int64]string) (bool, error)
}

// TestRunRoutes is POST /v1/agents/{agent_id}/test-runs/execute.
func TestRunRoutes(d TestRunDeps) []api.Route {
	h := &testRuns{d}
	return []api.Route{{Method: "POST", Path: "/v1/agents/:agent_id/test-runs/execute", Summary: "Run the agent's scenarios (scenario_ids, or all) once per matrix combination as staggered simulated calls over web or telephony; consent_to_charge must be true; at most 200 runs",
		Tag: "test-runs", Auth: api.AuthOrg, ReqSchema: "ExecuteTestRunInput", ResSchema: "TestRun", ResStatus: 201, Errors: []int{400, 402, 404, 422, 429, 502}, Handler: h.execute}}
}

type testRuns struct{ TestRunDeps }

type executeInput struct {
	Channel         *string                      `json:"channel"`
	PhoneNumberID   *int64                       `json:"phone_number_id"`
	ScenarioIDs     []int64                      `json:"scenario_ids"`
	Matrix          map[string][]json.RawMessage `json:"matrix"`
	StaggerSeconds  *int                         `json:"stagger_seconds"`
	ConsentToCharge *bool                        `json:"consent_to_charge"`
}

// runItem is one entry of a test run's runs array.
type runItem struct {
	SimulationID int64          `json:"simulation_id"`
	ScenarioID   *int64         `json:"scenario_id"`
	Caller       map[string]any `json:"caller"`
	Status       string         `json:"status"`
	CallID       *int64         `json:"call_id"`
	Verdict      string         `json:"verdict"`
	Score        *int64         `json:"score"`
	Outcome      *string        `json:"call_outcome"`
	// CriticalIssues counts the call's critical issue reports.
	CriticalIssues int64  `json:"critical_issue_count"`
	ErrorMessage   string `json:"error_message"`
}

func itemOf(r storage.SimulationRun) runItem {
	var c map[string]any
	_ = json.Unmarshal(r.Caller, &c)
	return runItem{SimulationID: r.ID, ScenarioID: r.ScenarioID, Caller: c, Status: r.Status, CallID: r.CallID, Verdict: "unknown", ErrorMessage: r.ErrorMessage}
}

func itemsJSON(rs []storage.SimulationRun) json.RawMessage {
	items := make([]runItem, len(rs))
	for i, r := range rs {
		items[i] = itemOf(r)
	}
	b, _ := json.Marshal(items)
	return b
}

func (h *testRuns) execute(c fiber.Ctx, p *storage.Principal) error {
	ctx := c.Context()
	agentID, err := api.PathID(c, "agent_id")
	if err != nil {
		return err
	}
	a, err := h.Agents.Agent(ctx, p.OrgID, agentID)
	if err != nil {
		return api.StoreErr(err)
	}
	var in executeInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	switch {
	case in.Channel == nil:
		f.Add("channel", "This field is required.")
	case *in.Channel != "web" && *in.Channel != "telephony":
		f.Add("channel", `Must be "web" or "telephony".`)
	case *in.Channel == "telephony" && in.PhoneNumberID == nil:
		f.Add("phone_number_id", "Required when the channel is telephony.")
	}
	if len(in.ScenarioIDs) > MaxExecuteScenarios {
		f.Add("scenario_ids", fmt.Sprintf("At most %d scenario ids.", MaxExecuteScenarios))
	}
	stagger := staggerAndConsent(f, in.StaggerSeconds, in.ConsentToCharge, "test runs")
	for k := range in.Matrix {
		if !slices.ContainsFunc(MatrixAxes, func(ax struct {
			Name string
			Max  int
		}) bool {
			return ax.Name == k
		}) {
			f.Add("matrix."+k, "Unknown axis; use audio_conditions, speech_style, caller_behavior or telephony.")
		}
	}
	for _, ax := range MatrixAxes {
		entries := in.Matrix[ax.Name]
		if len(entries) > ax.Max {
			f.Add("matrix."+ax.Name, fmt.Sprintf("At most %d entries.", ax.Max))
		}
		for i, raw := range entries {
			st := scenarios.Defaults()
			scenarios.MergeNested(ax.Name, fmt.Sprintf("matrix.%s[%d]", ax.Name, i), raw, &st, f)
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	tr, err := h.Start(ctx, Start{OrgID: p.OrgID, Agent: a, Channel: *in.Channel, PhoneNumberID: in.PhoneNumberID, ScenarioIDs: in.ScenarioIDs,
		Matrix: in.Matrix, Stagger: stagger, RequestedBy: requester(p)})
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(scenarios.TestRunView(tr, true))
}

// Start is a validated request to start a test run: execute's, a suite
// run's or a schedule's.
type Start struct {
	OrgID   int64
	Agent   storage.Agent
	Channel string
	// PhoneNumberID is the number a telephony run dials.
	PhoneNumberID *int64
	// ScenarioIDs chooses the agent's scenarios; nil means all of them.
	ScenarioIDs []int64
	// Matrix holds axis entries already validated (execute's).
	Matrix  map[string][]json.RawMessage
	Stagger int
	// RequestedBy is the user who asked (nil: an API key or a schedule).
	RequestedBy *int64
	// SuiteID makes it a suite run; ScheduledFor the run of a schedule
	// slot (storage.ErrConflict when the slot has its run already).
	SuiteID      *string
	ScheduledFor *time.Time
}

// Start expands s's scenarios over its matrix into staggered simulation
// runs and stores them with their test run, as execute does. Its errors
// are the API's (*api.Error: 404 number, 400 number not ringing the
// agent or too large an expansion, 422 no scenarios, 402 balance, 429
// admission, 502 no simulated caller: then the test run is returned too,
// stored and finished with its runs failed).
func (d TestRunDeps) Start(ctx context.Context, s Start) (storage.TestRun, error) {
	a := s.Agent
	// The target: the agent over the realtime WebSocket, or the phone
	// number over SIP.
	run := storage.SimulationRun{TargetType: "agent", TargetID: &a.ID, SimulatorProduct: "testing", ChargeMultiplier: Multipliers["testing"]}
	if s.Channel == "telephony" {
		if s.PhoneNumberID == nil {
			return storage.TestRun{}, api.FieldErr("phone_number_id", "Required when the channel is telephony.")
		}
		n, err := d.Numbers.PhoneNumber(ctx, s.OrgID, *s.PhoneNumberID)
		if errors.Is(err, storage.ErrNotFound) {
			return storage.TestRun{}, api.Err(http.StatusNotFound, "The phone number does not exist in this organization.")
		}
		if err != nil {
			return storage.TestRun{}, err
		}
		if n.InboundAgentID == nil || *n.InboundAgentID != a.ID {
			return storage.TestRun{}, api.FieldErr("phone_number_id", "The phone number does not ring agent "+strconv.FormatInt(a.ID, 10)+".")
		}
		run.TargetType, run.TargetID = "phone_number", &n.ID
	}
	if err := (&handlers{d.Deps}).resolve(ctx, s.OrgID, &run); err != nil {
		return storage.TestRun{}, err
	}
	run.RequestedByID = s.RequestedBy
	// The scenarios.
	all, err := d.Scenarios.Scenarios(ctx, s.OrgID, a.ID)
	if err != nil {
		return storage.TestRun{}, err
	}
	var chosen []storage.Scenario
	for _, sc := range all {
		if s.ScenarioIDs == nil || slices.Contains(s.ScenarioIDs, sc.ID) {
			chosen = append(chosen, sc)
		}
	}
	if len(chosen) == 0 {
		return storage.TestRun{}, api.Err(http.StatusUnprocessableEntity, "No scenarios of agent "+strconv.FormatInt(a.ID, 10)+" match: create some or check scenario_ids.")
	}
	combos := 1
	for _, ax := range MatrixAxes {
		if n := len(s.Matrix[ax.Name]); n > 0 {
			combos *= n
		}
	}
	if n := len(chosen) * combos; n > MaxExpanded {
		return storage.TestRun{}, api.Err(http.StatusBadRequest, fmt.Sprintf("The matrix expands to %d runs (%d scenarios x %d combinations); at most %d may run at once.", n, len(chosen), combos, MaxExpanded))
	}
	// Expand: each scenario once per combination, axes in MatrixAxes
	// order, the last axis varying fastest.
	now := time.Now()
	var runs []storage.SimulationRun
	for _, sc := range chosen {
		base := scenarios.SettingsOf(sc)
		sets := []scenarios.Settings{base}
		for _, ax := range MatrixAxes {
			entries := s.Matrix[ax.Name]
			if len(entries) == 0 {
				continue
			}
			var next []scenarios.Settings
			for _, st := range sets {
				for _, raw := range entries {
					s2 := st
					scenarios.MergeNested(ax.Name, ax.Name, raw, &s2, api.Fields{})
					next = append(next, s2)
				}
			}
			sets = next
		}
		for _, st := range sets {
			r := run
			id := sc.ID
			r.ScenarioID, r.ScenarioPrompt = &id, st.ScenarioPrompt
			// A scenario's inbound is the caller ringing the agent: the
			// simulation dials out.
			r.Direction = "outbound"
			if st.Direction == "outbound" {
				r.Direction = "inbound"
			}
			r.Caller, _ = json.Marshal(callerOf(st))
			r.NotBefore = now.Add(time.Duration(len(runs)*s.Stagger) * time.Second)
			runs = append(runs, r)
		}
	}
	bal, err := d.Balances.Balance(ctx, s.OrgID)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return storage.TestRun{}, err
	}
	if bal <= 0 {
		return storage.TestRun{}, api.Err(http.StatusPaymentRequired, "Insufficient balance: top up to run tests.")
	}
	tr := storage.TestRun{OrgID: s.OrgID, AgentID: a.ID, SuiteID: s.SuiteID, ScheduledFor: s.ScheduledFor, Status: "in_progress", Channel: s.Channel,
		TotalCount: int64(len(runs)), PromptHash: scenarios.PromptHash(agentPromptOf(a))}
	// A test run is admitted while the org has fewer than MaxActive runs
	// queued or in progress; its own staggered runs may take it past.
	st := d.Store.(TestRunStore)
	tr, out, err := st.CreateTestRunSimulations(ctx, tr, runs, MaxActive+len(runs)-1, itemsJSON)
	if errors.Is(err, storage.ErrSimulationLimit) {
		return storage.TestRun{}, api.Err(http.StatusTooManyRequests, "10 or more simulation runs are queued or in progress in this organization; wait for some to finish.")
	}
	if err != nil {
		return storage.TestRun{}, err
	}
	if why := (&handlers{d.Deps}).cannotStart(out[0]); why != "" {
		for _, r := range out {
			if _, err := d.Store.FinishSimulationRun(ctx, r.ID, "", storage.SimulationEnd{Status: storage.SimFailed, ErrorMessage: why, Event: completedEvent}); err != nil {
				return tr, err
			}
		}
		if err := d.Verdicts(ctx, s.OrgID, tr.ID, 0); err != nil {
			return tr, err
		}
		return tr, api.Err(http.StatusBadGateway, "The test run could not start: "+why+" (test run "+strconv.FormatInt(tr.ID, 10)+" and its runs are marked failed).")
	}
	if d.Wake != nil {
		d.Wake()
	}
	return tr, nil
}

func agentPromptOf(a storage.Agent) string {
	var cfg struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(a.Config, &cfg)
	return cfg.Prompt
}

// PassScore is the score at or above which a graded call without an
// outcome passes.
const PassScore = 70

// Verdict is a run's verdict from its simulation run and its call's
// latest grade (nil: none). The rule (docs/decisions.md): a run that
// never reached a call is unknown (the test harness failed, not the
// agent); a run whose call failed or was not answered fails; otherwise
// the grade decides: outcome success passes, failure or no_conversation
// fails, and an unknown outcome falls back on the score (>= PassScore
// passes, below fails); no grade, or a grade of measured facts only,
// is unknown.
func Verdict(r storage.SimulationRun, g *storage.CallGrade) string {
	if r.CallID == nil {
		return "unknown"
	}
	if r.Status == storage.SimFailed {
		return "fail"
	}
	if g == nil {
		return "unknown"
	}
	if g.CallOutcome != nil {
		switch *g.CallOutcome {
		case "success":
			return "pass"
		case "failure", "no_conversation":
			return "fail"
		}
	}
	if g.Score != nil {
		if *g.Score >= PassScore {
			return "pass"
		}
		return "fail"
	}
	return "unknown"
}

// Verdicts finishes test run id when all its runs have ended: it waits
// up to wait for grades still pending on their calls, then records each
// run's verdict, the counts, pass rate and verdict of the test run (for a
// suite run: the suite's rule, and its regressions against the
// baseline), and its scenarios' latest verdicts. It does nothing while a run is queued
// or in progress, and nothing twice.
func (d TestRunDeps) Verdicts(ctx context.Context, orgID, id int64, wait time.Duration) error {
	st := d.Store.(TestRunStore)
	rs, err := st.TestRunSimulations(ctx, orgID, id)
	if err != nil || len(rs) == 0 {
		return err
	}
	for _, r := range rs {
		if r.Status == storage.SimQueued || r.Status == storage.SimInProgress {
			return nil
		}
	}
	deadline := time.Now().Add(wait)
	critical := map[int64]int64{}
	for _, r := range rs {
		for r.CallID != nil {
			cl, err := d.Calls.Call(ctx, orgID, *r.CallID)
			if err != nil {
				break
			}
			critical[*r.CallID] = cl.CriticalIssueCount
			if cl.GradeStatus == nil || *cl.GradeStatus != "pending" {
				break
			}
			// A read settling the test run (wait 0) leaves a grade the
			// worker still waits for to it: finishing now would make
			// that run unknown for good.
			if wait == 0 && (cl.EndTime == nil || time.Since(*cl.EndTime) < GradeWait) {
				return nil
			}
			if !time.Now().Before(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	tr := storage.TestRun{ID: id, OrgID: orgID, Status: "completed", TotalCount: int64(len(rs))}
	items := make([]runItem, len(rs))
	byScenario := map[int64][]string{}
	for i, r := range rs {
		it := itemOf(r)
		var g *storage.CallGrade
		if r.CallID != nil {
			if cg, err := d.Calls.LatestCallGrade(ctx, orgID, *r.CallID); err == nil {
				g = &cg
				it.Score, it.Outcome = cg.Score, cg.CallOutcome
			} else if !errors.Is(err, storage.ErrNotFound) {
				return err
			}
		}
		it.Verdict = Verdict(r, g)
		if r.CallID != nil {
			it.CriticalIssues = critical[*r.CallID]
			if it.CriticalIssues > 0 {
				tr.CriticalFailureCount++
			}
		}
		switch it.Verdict {
		case "pass":
			tr.PassCount++
		case "fail":
			tr.FailCount++
		}
		if r.ScenarioID != nil {
			byScenario[*r.ScenarioID] = append(byScenario[*r.ScenarioID], it.Verdict)
		}
		items[i] = it
	}
	tr.Runs, _ = json.Marshal(items)
	rate := float64(tr.PassCount) / float64(tr.TotalCount)
	tr.PassRate = &rate
	tr.Verdict = combine(items)
	sv := map[int64]string{}
	for sid, vs := range byScenario {
		var its []runItem
		for _, v := range vs {
			its = append(its, runItem{Verdict: v})
		}
		sv[sid] = combine(its)
	}
	if err := d.suiteRule(ctx, &tr, sv); err != nil {
		return err
	}
	_, err = st.FinishTestRun(ctx, tr, sv)
	return err
}

// Settle marks the org's lost runs failed (as the run list does) and
// finishes test run id if all its runs have now ended, without waiting
// for grades (scenarios.SuiteDeps.Settle).
func (d TestRunDeps) Settle(ctx context.Context, orgID, id int64) error {
	now := time.Now()
	if _, err := d.Store.FailStaleSimulationRuns(ctx, orgID, now.Add(-StaleQueued), now.Add(-StaleLease), staleMessage); err != nil {
		return err
	}
	return d.Verdicts(ctx, orgID, id, 0)
}

// combine is the verdict of several runs: fail if any failed, pass if
// all passed, else unknown.
func combine(items []runItem) string {
	pass := 0
	for _, it := range items {
		if it.Verdict == "fail" {
			return "fail"
		}
		if it.Verdict == "pass" {
			pass++
		}
	}
	if pass == len(items) && pass > 0 {
		return "pass"
	}
	return "unknown"
}

// staggerAndConsent checks the stagger_seconds and consent_to_charge a
// test run or suite run is started with (what names them in the error)
// and returns the stagger, DefaultStagger when none is given.
func staggerAndConsent(f api.Fields, stagger *int, consent *bool, what string) int {
	s := DefaultStagger
	if stagger != nil {
		s = *stagger
		if s < 0 || s > 60 {
			f.Add("stagger_seconds", "Must be an integer from 0 to 60.")
		}
	}
	switch {
	case consent == nil:
		f.Add("consent_to_charge", "This field is required.")
	case !*consent:
		f.Add("consent_to_charge", "Must be true: "+what+" are charged like simulation runs.")
	}
	return s
}
