package simulations_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/grading"
	"github.com/voiced/voiced/control/simulations"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// clock is the schedule's clock: tests move it by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// suiteAPI is newAPI whose suite schedule runs on clk.
func suiteAPI(t *testing.T, db *storage.DB, clk *clock) *controltest.API {
	return controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Grading: grading.Config{NoWorker: true}, NoSimulationWorker: true,
		Suites: control.SuiteScheduleConfig{Now: clk.Now}}, control.WithSimulator(ready{}))
}

// TestSuiteRunRoutes covers POST /v1/suites/{id}/run and the suite-run
// reads: status codes, another org's suite, the run's shape and paging.
func TestSuiteRunRoutes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := suiteAPI(t, db, &clock{t: time.Now()})
		w := a.World()
		a.Credit(w.Org.ID, 100_000)
		k := w.MembK
		agent := controltest.ID(a.Agent(k, "Booker", nil))
		scenario := func(agent int64, title string) int64 {
			r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, map[string]any{"title": title, "scenario_prompt": "You want a table."})
			require.Equal(t, 201, r.Status, string(r.Body))
			return controltest.ID(r.Obj(t))
		}
		s1 := scenario(agent, "Book")
		scenario(agent, "Cancel")
		suite := func(body map[string]any) string {
			r := a.Do("POST", "/v1/suites", k, body)
			require.Equal(t, 201, r.Status, string(r.Body))
			return r.Obj(t)["id"].(string)
		}
		one := suite(map[string]any{"name": "One", "agent_id": agent, "scenario_ids": []int64{s1}, "min_pass_rate": 0.5})
		all := suite(map[string]any{"name": "All", "agent_id": agent})
		run := func(id string) string { return "/v1/suites/" + id + "/run" }
		ok := map[string]any{"consent_to_charge": true, "stagger_seconds": 0}

		// 400s name their field.
		for name, tc := range map[string]struct {
			body  map[string]any
			field string
		}{
			"consent missing":  {map[string]any{}, "consent_to_charge"},
			"consent false":    {map[string]any{"consent_to_charge": false}, "consent_to_charge"},
			"stagger high":     {override(ok, "stagger_seconds", 61), "stagger_seconds"},
			"stagger a string": {override(ok, "stagger_seconds", "5"), "stagger_seconds"},
		} {
			r := a.Do("POST", run(one), k, tc.body)
			require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
			require.Contains(t, string(r.Body), tc.field, name)
		}
		// 404: no such suite, a malformed id, another org's suite.
		other := a.World()
		a.Credit(other.Org.ID, 100_000)
		theirAgent := controltest.ID(a.Agent(other.OwnerK, "Theirs", nil))
		r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", theirAgent), other.OwnerK, map[string]any{"title": "t", "scenario_prompt": "p"})
		require.Equal(t, 201, r.Status)
		r = a.Do("POST", "/v1/suites", other.OwnerK, map[string]any{"name": "Theirs", "agent_id": theirAgent})
		require.Equal(t, 201, r.Status)
		theirs := r.Obj(t)["id"].(string)
		for _, p := range []string{run("9b2f3c1e-0000-4000-8000-000000000000"), run("not-a-uuid"), run(theirs)} {
			require.Equal(t, 404, a.Do("POST", p, k, ok).Status, p)
		}
		for _, p := range []string{"/v1/suites/" + theirs + "/runs", "/v1/suites/not-a-uuid/runs"} {
			require.Equal(t, 404, a.Do("GET", p, k, nil).Status, p)
		}

		// 201: the suite's scenarios once each, as a test run of the suite.
		r = a.Do("POST", run(one), k, ok)
		require.Equal(t, 201, r.Status, string(r.Body))
		tr := r.Obj(t)
		require.Equal(t, one, tr["suite_id"])
		require.Equal(t, "manual", tr["trigger"])
		require.Nil(t, tr["scheduled_for"])
		require.Equal(t, "in_progress", tr["status"])
		require.Equal(t, "web", tr["channel"])
		require.Equal(t, float64(1), tr["total_count"])
		require.Equal(t, float64(s1), tr["runs"].([]any)[0].(map[string]any)["scenario_id"])
		firstID := controltest.ID(tr)
		// [] is all of the agent's scenarios.
		r = a.Do("POST", run(all), k, ok)
		require.Equal(t, 201, r.Status, string(r.Body))
		require.Equal(t, float64(2), r.Obj(t)["total_count"])
		r = a.Do("POST", run(one), k, ok)
		require.Equal(t, 201, r.Status, string(r.Body))
		secondID := controltest.ID(r.Obj(t))

		// Reads: newest first, paged; the detail has runs; a run of
		// another suite is not this suite's.
		l := a.Do("GET", "/v1/suites/"+one+"/runs", k, nil).List(t)
		require.Len(t, l, 2)
		require.Equal(t, float64(secondID), l[0]["id"])
		require.Nil(t, l[0]["runs"], "the list has no per-run details")
		l = a.Do("GET", "/v1/suites/"+one+"/runs?limit=1&offset=1", k, nil).List(t)
		require.Len(t, l, 1)
		require.Equal(t, float64(firstID), l[0]["id"])
		require.Equal(t, 400, a.Do("GET", "/v1/suites/"+one+"/runs?limit=201", k, nil).Status)
		require.Equal(t, 400, a.Do("GET", "/v1/suites/"+one+"/runs?offset=-1", k, nil).Status)
		d := a.Do("GET", fmt.Sprintf("/v1/suites/%s/runs/%d", one, firstID), k, nil)
		require.Equal(t, 200, d.Status, string(d.Body))
		require.Len(t, d.Obj(t)["runs"], 1)
		require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/suites/%s/runs/%d", all, firstID), k, nil).Status)
		require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/suites/%s/runs/%d", theirs, firstID), other.OwnerK, nil).Status)
		require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/suites/%s/runs/x", one), k, nil).Status)
		// The agent's test runs list them too.
		require.Len(t, a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs", agent), k, nil).List(t), 3)

		// 429: the org has 4 runs queued; fill it to 10 and the next is
		// refused.
		for range 3 {
			require.Equal(t, 201, a.Do("POST", run(all), k, ok).Status)
		}
		require.Equal(t, 429, a.Do("POST", run(one), k, ok).Status)

		// 400: a telephony suite whose number rings another agent.
		_, num := a.Trunk(w, "+13105550100")
		r = a.Do("POST", "/v1/suites", k, map[string]any{"name": "Phone", "agent_id": agent, "channel": "telephony", "phone_number_id": controltest.ID(num)})
		require.Equal(t, 201, r.Status, string(r.Body))
		poor := a.World()
		pa := controltest.ID(a.Agent(poor.OwnerK, "Broke", nil))
		r = a.Do("POST", "/v1/suites", poor.OwnerK, map[string]any{"name": "Broke", "agent_id": pa})
		require.Equal(t, 201, r.Status)
		broke := r.Obj(t)["id"].(string)
		// 422: no scenarios; 402: no balance.
		require.Equal(t, 422, a.Do("POST", run(broke), poor.OwnerK, ok).Status)
		require.Equal(t, 201, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", pa), poor.OwnerK, map[string]any{"title": "t", "scenario_prompt": "p"}).Status)
		require.Equal(t, 402, a.Do("POST", run(broke), poor.OwnerK, ok).Status)
		phone := a.Do("GET", "/v1/suites", k, nil).List(t)[0]
		require.Equal(t, "Phone", phone["name"])
		// (The org is at its limit: the number check comes first.)
		r = a.Do("POST", run(phone["id"].(string)), k, ok)
		require.Equal(t, 400, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), "does not ring agent")
	})
}

// TestSuiteVerdictRule is the suite rule case by case.
func TestSuiteVerdictRule(t *testing.T) {
	for name, tc := range map[string]struct {
		pass, fail, total, critical int64
		min                         float64
		noCritical                  bool
		want, reason                string
	}{
		"all pass":                   {4, 0, 4, 0, 1, false, "pass", "reaches min_pass_rate 1.00"},
		"one fail, min 1":            {3, 1, 4, 0, 1, false, "fail", "below min_pass_rate 1.00"},
		"exactly min":                {4, 1, 5, 0, 0.8, false, "pass", "0.80 (4 of 5)"},
		"just below":                 {3, 2, 5, 0, 0.8, false, "fail", "0.60 (3 of 5) is below"},
		"unknowns count against":     {4, 0, 5, 0, 1, false, "fail", "0.80 (4 of 5)"},
		"nothing judged":             {0, 0, 3, 0, 0, false, "unknown", "No run was judged"},
		"no runs":                    {0, 0, 0, 0, 0, false, "unknown", "No run was judged"},
		"critical, rule off":         {4, 0, 4, 2, 1, false, "pass", "reaches"},
		"critical, rule on":          {4, 0, 4, 1, 1, true, "fail", "1 run(s) had a critical-severity issue"},
		"no critical, rule on":       {4, 0, 4, 0, 1, true, "pass", "no run had a critical-severity issue"},
		"both fail":                  {1, 3, 4, 1, 0.5, true, "fail", "below min_pass_rate 0.50; 1 run(s) had a critical"},
		"min 0 passes with one fail": {0, 1, 1, 0, 0, false, "pass", "reaches min_pass_rate 0.00"},
	} {
		v, why := simulations.SuiteVerdict(tc.pass, tc.fail, tc.total, tc.critical, tc.min, tc.noCritical)
		require.Equal(t, tc.want, v, name)
		require.Contains(t, why, tc.reason, name)
	}
	got := simulations.Regressions(map[int64]string{1: "pass", 2: "pass", 3: "fail", 4: "pass", 5: "unknown"},
		map[int64]string{1: "pass", 2: "fail", 3: "fail", 4: "unknown", 5: "fail", 6: "fail", 0: "fail"})
	require.Equal(t, []simulations.Regression{{ScenarioID: 2, Previous: "pass", Current: "fail"}}, got)
	require.Equal(t, []simulations.Regression{}, simulations.Regressions(nil, map[int64]string{1: "fail"}))

	day := 24 * time.Hour
	slot := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	require.Equal(t, slot.Add(day), *simulations.NextSlot("daily", slot, slot.Add(time.Minute)))
	require.Equal(t, slot.Add(4*day), *simulations.NextSlot("daily", slot, slot.Add(3*day+time.Hour)), "missed slots are skipped")
	require.Equal(t, slot.Add(2*day), *simulations.NextSlot("daily", slot, slot.Add(day)), "a slot due exactly now is past")
	require.Equal(t, slot.Add(time.Hour), *simulations.NextSlot("hourly", slot, slot))
	require.Equal(t, slot.Add(7*day), *simulations.NextSlot("weekly", slot, slot.Add(day)))
	require.Nil(t, simulations.NextSlot("none", slot, slot))
}

// TestSuiteSchedule: a daily suite runs by itself when the accelerated
// clock reaches its slot, once per slot across two schedulers (even when
// one dies between starting the run and moving the schedule on); its
// verdict is the suite rule, and a scenario that passed in the previous
// run and fails now is a regression against it; a run that cannot start
// is recorded failed; a busy org defers the slot; disabled suites and
// missed days do not pile up runs.
func TestSuiteSchedule(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		clk := &clock{t: time.Now().Truncate(time.Second)}
		a := suiteAPI(t, db, clk)
		w := a.World()
		a.Credit(w.Org.ID, 100_000)
		k := w.MembK
		ctx := context.Background()
		agent := controltest.ID(a.Agent(k, "Booker", nil))
		var sc []int64
		for _, title := range []string{"book", "cancel"} {
			r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, map[string]any{"title": title, "scenario_prompt": "p"})
			require.Equal(t, 201, r.Status)
			sc = append(sc, controltest.ID(r.Obj(t)))
		}
		t0 := clk.Now()
		r := a.Do("POST", "/v1/suites", k, map[string]any{"name": "Nightly", "agent_id": agent, "schedule": "daily", "min_pass_rate": 0.5, "no_critical_failures": true})
		require.Equal(t, 201, r.Status, string(r.Body))
		suite := r.Obj(t)
		id := suite["id"].(string)
		day := 24 * time.Hour
		require.Equal(t, t0.Add(day).UTC().Format(time.RFC3339), parseTS(t, suite["next_run_at"]).UTC().Format(time.RFC3339), "one period after the schedule was set")
		r = a.Do("POST", "/v1/suites", k, map[string]any{"name": "Paused", "agent_id": agent, "schedule": "hourly", "enabled": false})
		require.Equal(t, 201, r.Status)
		require.Nil(t, r.Obj(t)["next_run_at"], "a disabled suite has no next run")
		paused := r.Obj(t)["id"].(string)

		deps := simulations.TestRunDeps{Deps: simulations.Deps{Store: a.Store.Simulations, Agents: a.Store.Agents, Numbers: a.Store.Numbers,
			Balances: a.Store.Billing, Calls: a.Store.Calls, Simulator: ready{}}, Scenarios: a.Store.Scenarios}
		s1 := simulations.NewScheduler(deps, a.Store.Scenarios, clk.Now, nil)
		s2 := simulations.NewScheduler(deps, a.Store.Scenarios, clk.Now, nil)
		runs := func() []map[string]any { return a.Do("GET", "/v1/suites/"+id+"/runs", k, nil).List(t) }

		// Not due yet.
		did, err := s1.Once(ctx)
		require.NoError(t, err)
		require.False(t, did)
		clk.Add(day - time.Minute)
		did, err = s2.Once(ctx)
		require.NoError(t, err)
		require.False(t, did)
		require.Empty(t, runs())

		// Due: one of the two schedulers starts it, once.
		clk.Add(2 * time.Minute)
		did, err = s1.Once(ctx)
		require.NoError(t, err)
		require.True(t, did)
		did, err = s2.Once(ctx)
		require.NoError(t, err)
		require.False(t, did, "the slot is taken")
		l := runs()
		require.Len(t, l, 1)
		first := l[0]
		require.Equal(t, "schedule", first["trigger"])
		require.Equal(t, t0.Add(day).UTC(), parseTS(t, first["scheduled_for"]).UTC())
		require.Equal(t, float64(2), first["total_count"])
		got := a.Do("GET", "/v1/suites/"+id, k, nil).Obj(t)
		require.Equal(t, t0.Add(2*day).UTC(), parseTS(t, got["next_run_at"]).UTC())

		// The runs end: book passes, cancel passes (the suite passes, no
		// baseline yet).
		finish(t, a, w.Org.ID, controltest.ID(first), map[int64]string{sc[0]: "success", sc[1]: "success"}, nil)
		require.NoError(t, deps.Verdicts(ctx, w.Org.ID, controltest.ID(first), 0))
		d := a.Do("GET", fmt.Sprintf("/v1/suites/%s/runs/%d", id, controltest.ID(first)), k, nil).Obj(t)
		require.Equal(t, "completed", d["status"])
		require.Equal(t, "pass", d["verdict"], "%v", d)
		require.Contains(t, d["verdict_reason"], "reaches min_pass_rate 0.50")
		require.Equal(t, []any{}, d["regressions"])
		require.Nil(t, d["baseline_run_id"])

		// A scheduler dies after starting the next slot's run, before
		// moving the schedule on; when its lease runs out the other one
		// takes the suite, finds the slot's run and moves on.
		clk.Add(day)
		su, ok, err := a.Store.Scenarios.ClaimDueSuite(ctx, clk.Now(), "dead", 2*time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = deps.StartSuite(ctx, su, 0, nil, su.NextRunAt)
		require.NoError(t, err)
		did, err = s2.Once(ctx)
		require.NoError(t, err)
		require.False(t, did, "leased")
		clk.Add(3 * time.Minute)
		did, err = s2.Once(ctx)
		require.NoError(t, err)
		require.True(t, did)
		l = runs()
		require.Len(t, l, 2, "the slot ran once")
		second := l[0]
		require.Equal(t, t0.Add(2*day).UTC(), parseTS(t, second["scheduled_for"]).UTC())
		got = a.Do("GET", "/v1/suites/"+id, k, nil).Obj(t)
		require.Equal(t, t0.Add(3*day).UTC(), parseTS(t, got["next_run_at"]).UTC())

		// This time cancel fails: a regression against the first run; the
		// pass rate 0.5 still reaches min_pass_rate, but book's call has a
		// critical issue and the suite forbids them.
		finish(t, a, w.Org.ID, controltest.ID(second), map[int64]string{sc[0]: "success", sc[1]: "failure"}, map[int64]bool{sc[0]: true})
		require.NoError(t, deps.Verdicts(ctx, w.Org.ID, controltest.ID(second), 0))
		d = a.Do("GET", fmt.Sprintf("/v1/suites/%s/runs/%d", id, controltest.ID(second)), k, nil).Obj(t)
		require.Equal(t, "fail", d["verdict"], "%v", d)
		require.Equal(t, float64(1), d["critical_failure_count"])
		require.Contains(t, d["verdict_reason"], "critical-severity")
		require.NotContains(t, d["verdict_reason"], "below")
		require.Equal(t, float64(controltest.ID(first)), d["baseline_run_id"])
		require.Equal(t, []any{map[string]any{"scenario_id": float64(sc[1]), "previous": "pass", "current": "fail"}}, d["regressions"])
		for _, it := range d["runs"].([]any) {
			item := it.(map[string]any)
			want := float64(0)
			if item["scenario_id"] == float64(sc[0]) {
				want = 1
			}
			require.Equal(t, want, item["critical_issue_count"])
		}
		require.Equal(t, "fail", a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-scenarios/%d", agent, sc[1]), k, nil).Obj(t)["latest_verdict"])

		// Three days down: one run for the latest slot, not three.
		clk.Add(3*day + time.Hour)
		for {
			did, err := s1.Once(ctx)
			require.NoError(t, err)
			if !did {
				break
			}
		}
		l = runs()
		require.Len(t, l, 3)
		require.Equal(t, t0.Add(5*day).UTC(), parseTS(t, l[0]["scheduled_for"]).UTC(), "the latest slot due")
		got = a.Do("GET", "/v1/suites/"+id, k, nil).Obj(t)
		require.Equal(t, t0.Add(6*day).UTC(), parseTS(t, got["next_run_at"]).UTC())
		require.Empty(t, a.Do("GET", "/v1/suites/"+paused+"/runs", k, nil).List(t), "a disabled suite does not run")

		// A busy org (6 runs queued, then 10) defers the slot; a lease later it
		// runs.
		clk.Add(day)
		_, err = db.ExecContext(ctx, `UPDATE simulation_runs SET status = 'queued' WHERE org_id = $1`, w.Org.ID)
		require.NoError(t, err)
		require.Equal(t, 6, countRuns(t, a, w.Org.ID))
		for range 2 {
			require.Equal(t, 201, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", agent), k, map[string]any{"channel": "web", "consent_to_charge": true}).Status)
		}
		did, err = s1.Once(ctx)
		require.NoError(t, err)
		require.True(t, did)
		require.Len(t, runs(), 3, "deferred, not recorded")
		_, err = db.ExecContext(ctx, `UPDATE simulation_runs SET status = 'failed' WHERE org_id = $1`, w.Org.ID)
		require.NoError(t, err)
		did, err = s1.Once(ctx)
		require.NoError(t, err)
		require.False(t, did, "still leased")
		clk.Add(3 * time.Minute)
		did, err = s1.Once(ctx)
		require.NoError(t, err)
		require.True(t, did)
		require.Len(t, runs(), 4)

		// No balance: the slot gets a failed run that says why, and the
		// schedule moves on.
		_, err = db.ExecContext(ctx, `UPDATE billing_accounts SET balance_cents = 0 WHERE org_id = $1`, w.Org.ID)
		require.NoError(t, err)
		clk.Add(day)
		did, err = s2.Once(ctx)
		require.NoError(t, err)
		require.True(t, did)
		l = runs()
		require.Len(t, l, 5)
		require.Equal(t, "failed", l[0]["status"])
		require.Equal(t, "schedule", l[0]["trigger"])
		require.Contains(t, l[0]["error_message"], "Insufficient balance")
		got = a.Do("GET", "/v1/suites/"+id, k, nil).Obj(t)
		require.True(t, parseTS(t, got["next_run_at"]).After(clk.Now()))

		// Changing the schedule restarts it one period from now; turning
		// it off clears it.
		r = a.Do("PATCH", "/v1/suites/"+id, k, map[string]any{"schedule": "hourly"})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, clk.Now().Add(time.Hour).UTC(), parseTS(t, r.Obj(t)["next_run_at"]).UTC())
		r = a.Do("PATCH", "/v1/suites/"+id, k, map[string]any{"name": "Renamed"})
		require.Equal(t, clk.Now().Add(time.Hour).UTC(), parseTS(t, r.Obj(t)["next_run_at"]).UTC(), "other edits keep it")
		r = a.Do("PATCH", "/v1/suites/"+id, k, map[string]any{"enabled": false})
		require.Nil(t, r.Obj(t)["next_run_at"])
		clk.Add(2 * time.Hour)
		did, err = s1.Once(ctx)
		require.NoError(t, err)
		require.False(t, did)
	})
}

func parseTS(t *testing.T, v any) time.Time {
	s, ok := v.(string)
	require.True(t, ok, "a timestamp: %v", v)
	ts, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return ts
}

// finish ends test run id's runs as the worker would: each scenario's
// call graded with outcome[scenario] (critical: with a critical issue
// report filed on it).
func finish(t *testing.T, a *controltest.API, orgID, id int64, outcome map[int64]string, critical map[int64]bool) {
	ctx := context.Background()
	rs, err := a.Store.Simulations.TestRunSimulations(ctx, orgID, id)
	require.NoError(t, err)
	require.NotEmpty(t, rs)
	for _, r := range rs {
		c, err := a.Store.Calls.CreateCall(ctx, storage.Call{OrgID: orgID, Direction: storage.DirectionWeb, Status: storage.CallCompleted})
		require.NoError(t, err)
		o := outcome[*r.ScenarioID]
		score := int64(90)
		if o != "success" {
			score = 20
		}
		_, err = a.Store.Calls.AddCallGrade(ctx, storage.CallGrade{CallID: c.ID, Status: "completed", CallOutcome: &o, Score: &score})
		require.NoError(t, err)
		if critical[*r.ScenarioID] {
			_, err := a.Store.Issues.FileIssueReport(ctx, orgID, storage.IssueReport{CallID: c.ID, Severity: "critical", Status: "open", Title: "Leaked a card number",
				Metadata: []byte("{}")})
			require.NoError(t, err)
		}
		_, err = a.Store.Simulations.FinishSimulationRun(ctx, r.ID, "", storage.SimulationEnd{Status: storage.SimCompleted, CallID: &c.ID})
		require.NoError(t, err)
	}
}

// TestSuiteScheduleOncePerSlot: four schedulers (replicas) racing for the
// same due slots start each slot's run exactly once.
func TestSuiteScheduleOncePerSlot(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		clk := &clock{t: time.Now()}
		a := suiteAPI(t, db, clk)
		w := a.World()
		a.Credit(w.Org.ID, 100_000)
		k := w.MembK
		agent := controltest.ID(a.Agent(k, "Booker", nil))
		require.Equal(t, 201, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, map[string]any{"title": "t", "scenario_prompt": "p"}).Status)
		var ids []string
		for _, name := range []string{"a", "b", "c"} {
			r := a.Do("POST", "/v1/suites", k, map[string]any{"name": name, "agent_id": agent, "schedule": "hourly"})
			require.Equal(t, 201, r.Status)
			ids = append(ids, r.Obj(t)["id"].(string))
		}
		deps := simulations.TestRunDeps{Deps: simulations.Deps{Store: a.Store.Simulations, Agents: a.Store.Agents, Numbers: a.Store.Numbers,
			Balances: a.Store.Billing, Calls: a.Store.Calls, Simulator: ready{}}, Scenarios: a.Store.Scenarios}
		for slot := 1; slot <= 2; slot++ {
			clk.Add(time.Hour + time.Second)
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				s := simulations.NewScheduler(deps, a.Store.Scenarios, clk.Now, nil)
				wg.Go(func() {
					for {
						did, err := s.Once(context.Background())
						if err != nil {
							errs <- err
							return
						}
						if !did {
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			// Finish them, so the org's limit does not defer the next slot.
			_, err := db.ExecContext(context.Background(), `UPDATE simulation_runs SET status = 'failed' WHERE org_id = $1`, w.Org.ID)
			require.NoError(t, err)
			for _, id := range ids {
				require.Len(t, a.Do("GET", "/v1/suites/"+id+"/runs", k, nil).List(t), slot, "suite %s, slot %d", id, slot)
			}
		}
	})
}
