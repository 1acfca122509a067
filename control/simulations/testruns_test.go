package simulations_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/simulations"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestExecuteTestRun covers POST /v1/agents/{id}/test-runs/execute:
// every status code, the matrix expansion into simulation runs carrying
// the scenarios' caller settings, and the stagger.
func TestExecuteTestRun(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 100_000)
		k := w.MembK
		agent := controltest.ID(a.Agent(k, "Booker", nil))
		path := fmt.Sprintf("/v1/agents/%d/test-runs/execute", agent)
		_, num := a.Trunk(w, "+13105550100")
		numID := controltest.ID(num)
		r := a.Do("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", numID), w.OwnerK, map[string]any{"inbound_agent_id": agent})
		require.Equal(t, 200, r.Status, string(r.Body))
		_, other := a.Trunk(w, "+13105550101") // rings no agent
		scenario := func(body map[string]any) int64 {
			r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, body)
			require.Equal(t, 201, r.Status, string(r.Body))
			return controltest.ID(r.Obj(t))
		}
		s1 := scenario(map[string]any{"title": "Book", "scenario_prompt": "You want a table for two.",
			"speech_style": map[string]any{"accent": "en-GB"}, "caller_behavior": map[string]any{"dtmf_sequence": "12#"}})
		scenario(map[string]any{"title": "Cancel", "scenario_prompt": "You cancel your booking.",
			"audio_conditions": map[string]any{"noise_asset": "cafe", "snr_db": 10}})
		foreignWorld := a.World()
		foreign := controltest.ID(a.Agent(foreignWorld.OwnerK, "Theirs", nil))

		base := map[string]any{"channel": "web", "consent_to_charge": true}
		with := func(kv ...any) map[string]any { return override(base, kv...) }
		ids := func(n int) []int64 {
			out := make([]int64, n)
			for i := range out {
				out[i] = int64(i + 1)
			}
			return out
		}
		list := func(n int, v any) []any {
			out := make([]any, n)
			for i := range out {
				out[i] = v
			}
			return out
		}
		// 400: each bad field names itself.
		for name, tc := range map[string]struct {
			body  map[string]any
			field string
		}{
			"channel missing":     {with("channel", nil), "channel"},
			"channel bad":         {with("channel", "carrier-pigeon"), "channel"},
			"phone required":      {with("channel", "telephony"), "phone_number_id"},
			"consent missing":     {with("consent_to_charge", nil), "consent_to_charge"},
			"consent false":       {with("consent_to_charge", false), "consent_to_charge"},
			"stagger high":        {with("stagger_seconds", 61), "stagger_seconds"},
			"stagger negative":    {with("stagger_seconds", -1), "stagger_seconds"},
			"too many ids":        {with("scenario_ids", ids(51)), "scenario_ids"},
			"unknown axis":        {with("matrix", map[string]any{"weather": []any{map[string]any{}}}), "matrix.weather"},
			"audio cap":           {with("matrix", map[string]any{"audio_conditions": list(6, map[string]any{"noise_asset": "none"})}), "matrix.audio_conditions"},
			"speech cap":          {with("matrix", map[string]any{"speech_style": list(8, map[string]any{"pace": "slow"})}), "matrix.speech_style"},
			"behavior cap":        {with("matrix", map[string]any{"caller_behavior": list(9, map[string]any{})}), "matrix.caller_behavior"},
			"telephony cap":       {with("matrix", map[string]any{"telephony": list(3, map[string]any{})}), "matrix.telephony"},
			"snr missing":         {with("matrix", map[string]any{"audio_conditions": []any{map[string]any{"noise_asset": "street"}}}), "matrix.audio_conditions[0].snr_db"},
			"snr bad":             {with("matrix", map[string]any{"audio_conditions": []any{map[string]any{"noise_asset": "street", "snr_db": 7}}}), "matrix.audio_conditions[0].snr_db"},
			"accent bad":          {with("matrix", map[string]any{"speech_style": []any{map[string]any{"accent": "en-NZ"}}}), "matrix.speech_style[0].accent"},
			"dtmf bad":            {with("matrix", map[string]any{"caller_behavior": []any{map[string]any{"dtmf_sequence": "12A"}}}), "matrix.caller_behavior[0].dtmf_sequence"},
			"silence bad":         {with("matrix", map[string]any{"caller_behavior": []any{map[string]any{"long_silence_seconds": 16}}}), "matrix.caller_behavior[0].long_silence_seconds"},
			"entry unknown key":   {with("matrix", map[string]any{"telephony": []any{map[string]any{"fax": true}}}), "matrix.telephony[0].fax"},
			"entry not an object": {with("matrix", map[string]any{"telephony": []any{true}}), "matrix.telephony[0]"},
			"other number":        {with("channel", "telephony", "phone_number_id", controltest.ID(other)), "phone_number_id"},
		} {
			r := a.Do("POST", path, k, tc.body)
			require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
			require.Contains(t, r.Obj(t), tc.field, "%s: %s", name, r.Body)
		}
		// 400: the expansion is over the cap (2 scenarios x 5 x 7 x 2 = 140
		// fits; x 8 behaviours does not).
		big := map[string]any{"audio_conditions": list(5, map[string]any{"noise_asset": "none"}), "speech_style": list(7, map[string]any{"pace": "fast"}),
			"caller_behavior": list(8, map[string]any{"long_silence_seconds": 1}), "telephony": list(2, map[string]any{"voicemail_answer": false})}
		r = a.Do("POST", path, k, with("matrix", big))
		require.Equal(t, 400, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), "1120 runs")
		require.Equal(t, 0, countRuns(t, a, w.Org.ID), "nothing is queued by a refused request")

		// 404: another org's agent, a missing or foreign number.
		require.Equal(t, 404, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", foreign), k, base).Status)
		require.Equal(t, 404, a.Do("POST", path, k, with("channel", "telephony", "phone_number_id", 999999)).Status)
		_, theirNum := a.Trunk(foreignWorld, "+13105550199")
		require.Equal(t, 404, a.Do("POST", path, k, with("channel", "telephony", "phone_number_id", controltest.ID(theirNum))).Status)

		// 422: no scenario matches (ids of none of the agent's, or an agent
		// without scenarios).
		r = a.Do("POST", path, k, with("scenario_ids", []int64{999999}))
		require.Equal(t, 422, r.Status, string(r.Body))
		bare := controltest.ID(a.Agent(k, "Bare", nil))
		require.Equal(t, 422, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", bare), k, base).Status)

		// 201: one scenario x 2 audio conditions x 2 accents over
		// telephony, staggered 3 s.
		matrix := map[string]any{"audio_conditions": []any{map[string]any{"noise_asset": "none"}, map[string]any{"noise_asset": "street", "snr_db": 5}},
			"speech_style": []any{map[string]any{"accent": "en-US"}, map[string]any{"pace": "slow"}}}
		r = a.Do("POST", path, k, with("channel", "telephony", "phone_number_id", numID, "scenario_ids", []int64{s1}, "matrix", matrix, "stagger_seconds", 3))
		require.Equal(t, 201, r.Status, string(r.Body))
		tr := r.Obj(t)
		require.Equal(t, "in_progress", tr["status"])
		require.Equal(t, "telephony", tr["channel"])
		require.Equal(t, "unknown", tr["verdict"])
		require.Equal(t, float64(4), tr["total_count"])
		require.Nil(t, tr["completed_at"])
		items := tr["runs"].([]any)
		require.Len(t, items, 4)
		runs, err := a.Store.Simulations.TestRunSimulations(context.Background(), w.Org.ID, controltest.ID(tr))
		require.NoError(t, err)
		require.Len(t, runs, 4)
		want := []simulations.Caller{
			{NoiseAsset: "none", Pace: "natural", Disfluencies: "none", Accent: "en-US", DTMFSequence: "12#"},
			{NoiseAsset: "none", Pace: "slow", Disfluencies: "none", Accent: "en-GB", DTMFSequence: "12#"},
			{NoiseAsset: "street", SNRdB: ptr(5), Pace: "natural", Disfluencies: "none", Accent: "en-US", DTMFSequence: "12#"},
			{NoiseAsset: "street", SNRdB: ptr(5), Pace: "slow", Disfluencies: "none", Accent: "en-GB", DTMFSequence: "12#"},
		}
		for i, run := range runs {
			var c simulations.Caller
			require.NoError(t, json.Unmarshal(run.Caller, &c))
			require.Equal(t, want[i], c, "run %d", i)
			require.Equal(t, "sip", run.Mode)
			require.Equal(t, "phone_number", run.TargetType)
			require.Equal(t, numID, *run.TargetID)
			require.Equal(t, s1, *run.ScenarioID)
			require.Equal(t, "You want a table for two.", run.ScenarioPrompt)
			require.Equal(t, "outbound", run.Direction, "an inbound scenario: the simulated caller dials the agent")
			require.Equal(t, storage.SimQueued, run.Status)
			require.Equal(t, int64(3*i), int64(run.NotBefore.Sub(runs[0].NotBefore).Seconds()+0.5), "staggered")
			item := items[i].(map[string]any)
			require.Equal(t, float64(run.ID), item["simulation_id"])
			require.Equal(t, "unknown", item["verdict"])
		}
		// The read route renders the same object.
		got := a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", agent, controltest.ID(tr)), k, nil)
		require.Equal(t, 200, got.Status)
		require.Len(t, got.Obj(t)["runs"], 4)

		// 429: 4 runs are active; a second test run is admitted (fewer
		// than 10), and takes the org past 10 with its own runs; the next
		// is refused.
		r = a.Do("POST", path, k, with("matrix", map[string]any{"caller_behavior": list(8, map[string]any{"long_silence_seconds": 2})}))
		require.Equal(t, 201, r.Status, string(r.Body))
		require.Equal(t, float64(16), r.Obj(t)["total_count"], "all scenarios x 8")
		r = a.Do("POST", path, k, base)
		require.Equal(t, 429, r.Status, string(r.Body))
		require.Equal(t, 20, countRuns(t, a, w.Org.ID))

		// 402: no balance.
		poor := a.World()
		pa := controltest.ID(a.Agent(poor.OwnerK, "Broke", nil))
		require.Equal(t, 201, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", pa), poor.OwnerK, map[string]any{"title": "x", "scenario_prompt": "y"}).Status)
		ppath := fmt.Sprintf("/v1/agents/%d/test-runs/execute", pa)
		require.Equal(t, 402, a.Do("POST", ppath, poor.OwnerK, base).Status)

		// 502: an outbound scenario (the agent would call out) cannot start
		// here; the test run is kept, failed and finished.
		a.Credit(poor.Org.ID, 100)
		require.Equal(t, 201, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", pa), poor.OwnerK, map[string]any{"title": "out", "scenario_prompt": "z", "direction": "outbound"}).Status)
		ls := a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-scenarios", pa), poor.OwnerK, nil).List(t)
		r = a.Do("POST", ppath, poor.OwnerK, with("scenario_ids", []int64{controltest.ID(ls[1])}))
		require.Equal(t, 502, r.Status, string(r.Body))
		trs := a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs", pa), poor.OwnerK, nil).List(t)
		require.Len(t, trs, 1)
		require.Equal(t, "completed", trs[0]["status"])
		require.Equal(t, "unknown", trs[0]["verdict"], "no call was made: the harness failed, not the agent")
		require.NotNil(t, trs[0]["completed_at"])
	})
}

func ptr(v int) *int { return &v }

func countRuns(t *testing.T, a *controltest.API, orgID int64) int {
	var n int
	require.NoError(t, a.Store.DB().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM simulation_runs WHERE org_id = $1`, orgID).Scan(&n))
	return n
}

// TestTestRunVerdicts: when the last run ends the test run gets each
// run's verdict from its call's grade, its counts, pass rate and verdict,
// and its scenarios their latest verdict; a second finish changes
// nothing.
func TestTestRunVerdicts(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 100_000)
		k := w.MembK
		agent := controltest.ID(a.Agent(k, "Booker", nil))
		ctx := context.Background()
		var sc []int64
		for _, title := range []string{"pass", "fail", "mixed", "ungraded"} {
			r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, map[string]any{"title": title, "scenario_prompt": "p"})
			require.Equal(t, 201, r.Status)
			sc = append(sc, controltest.ID(r.Obj(t)))
		}
		matrix := map[string]any{"telephony": []any{map[string]any{"voicemail_answer": false}, map[string]any{"voicemail_answer": true}}}
		r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", agent), k, map[string]any{"channel": "web", "consent_to_charge": true, "matrix": matrix, "stagger_seconds": 0})
		require.Equal(t, 201, r.Status, string(r.Body))
		trID := controltest.ID(r.Obj(t))
		runs, err := a.Store.Simulations.TestRunSimulations(ctx, w.Org.ID, trID)
		require.NoError(t, err)
		require.Len(t, runs, 8)
		d := simulations.TestRunDeps{Deps: simulations.Deps{Store: a.Store.Simulations, Calls: a.Store.Calls}, Scenarios: a.Store.Scenarios}
		// outcome, score per run (nil outcome and score: facts-only grade;
		// "none": no grade; "nocall": the run never reached a call;
		// "failedcall": the call was not answered).
		type plan struct {
			outcome string
			score   int64
		}
		plans := []plan{{"success", 90}, {"", 75}, {"failure", 20}, {"no_conversation", 0}, {"success", 80}, {"", 40}, {"none", 0}, {"nocall", 0}}
		wantV := []string{"pass", "pass", "fail", "fail", "pass", "fail", "unknown", "unknown"}
		for i, run := range runs {
			p := plans[i]
			end := storage.SimulationEnd{Status: storage.SimCompleted}
			if p.outcome == "nocall" {
				end.Status, end.ErrorMessage = storage.SimFailed, "could not start"
			} else {
				c, err := a.Store.Calls.CreateCall(ctx, storage.Call{OrgID: w.Org.ID, Direction: storage.DirectionWeb, Status: storage.CallCompleted})
				require.NoError(t, err)
				end.CallID = &c.ID
				if p.outcome != "none" {
					g := storage.CallGrade{CallID: c.ID, Status: "completed"}
					if p.outcome != "" {
						o := p.outcome
						g.CallOutcome = &o
					}
					if p.score > 0 || p.outcome != "" {
						s := p.score
						g.Score = &s
					}
					_, err := a.Store.Calls.AddCallGrade(ctx, g)
					require.NoError(t, err)
				}
			}
			_, err := a.Store.Simulations.FinishSimulationRun(ctx, run.ID, "", end)
			require.NoError(t, err)
			if i < len(runs)-1 {
				require.NoError(t, d.Verdicts(ctx, w.Org.ID, trID, 0))
				got := a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", agent, trID), k, nil).Obj(t)
				require.Equal(t, "in_progress", got["status"], "not finished while a run is left")
			}
		}
		require.NoError(t, d.Verdicts(ctx, w.Org.ID, trID, 0))
		got := a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", agent, trID), k, nil).Obj(t)
		require.Equal(t, "completed", got["status"])
		require.Equal(t, "fail", got["verdict"])
		require.Equal(t, float64(3), got["pass_count"])
		require.Equal(t, float64(3), got["fail_count"])
		require.Equal(t, float64(8), got["total_count"])
		require.InDelta(t, 3.0/8, got["pass_rate"], 1e-9)
		require.NotNil(t, got["completed_at"])
		for i, it := range got["runs"].([]any) {
			require.Equal(t, wantV[i], it.(map[string]any)["verdict"], "run %d (%v)", i, plans[i])
		}
		want := map[int64]string{sc[0]: "pass", sc[1]: "fail", sc[2]: "fail", sc[3]: "unknown"}
		for id, v := range want {
			s := a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-scenarios/%d", agent, id), k, nil).Obj(t)
			require.Equal(t, v, s["latest_verdict"], "scenario %d", id)
		}
		// Once: a later finish does not rewrite it.
		done, err := a.Store.Simulations.FinishTestRun(ctx, storage.TestRun{ID: trID, OrgID: w.Org.ID, Status: "completed", Verdict: "pass"}, nil)
		require.NoError(t, err)
		require.False(t, done)
		require.Equal(t, "fail", a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", agent, trID), k, nil).Obj(t)["verdict"])
	})
}

// TestTestRunSettlesLostRuns: a test run whose runs were lost (no worker
// finished them) is finished by the test-run reads: its runs are marked
// failed like the run list does, and it gets its verdicts.
func TestTestRunSettlesLostRuns(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 10_000)
		k := w.MembK
		agent := controltest.ID(a.Agent(k, "Booker", nil))
		r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, map[string]any{"title": "t", "scenario_prompt": "p"})
		require.Equal(t, 201, r.Status)
		r = a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", agent), k, map[string]any{"channel": "web", "consent_to_charge": true})
		require.Equal(t, 201, r.Status, string(r.Body))
		id := controltest.ID(r.Obj(t))
		detail := fmt.Sprintf("/v1/agents/%d/test-runs/%d", agent, id)
		require.Equal(t, "in_progress", a.Do("GET", detail, k, nil).Obj(t)["status"], "a run still due is not lost")
		old := time.Now().Add(-simulations.StaleQueued - time.Minute).UnixMilli()
		_, err := a.Store.DB().ExecContext(context.Background(), `UPDATE simulation_runs SET not_before = $1 WHERE test_run_id = $2`, old, id)
		require.NoError(t, err)
		l := a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs", agent), k, nil).List(t)
		require.Equal(t, "completed", l[0]["status"])
		got := a.Do("GET", detail, k, nil).Obj(t)
		require.Equal(t, "completed", got["status"])
		require.Equal(t, "unknown", got["verdict"])
		item := got["runs"].([]any)[0].(map[string]any)
		require.Equal(t, "failed", item["status"])
		require.Contains(t, item["error_message"], "completion signal was lost")
	})
}

// TestVerdictRule is the per-run rule, case by case.
func TestVerdictRule(t *testing.T) {
	call := int64(7)
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	done := storage.SimulationRun{Status: storage.SimCompleted, CallID: &call}
	failed := storage.SimulationRun{Status: storage.SimFailed, CallID: &call}
	for name, tc := range map[string]struct {
		run  storage.SimulationRun
		g    *storage.CallGrade
		want string
	}{
		"no call":              {storage.SimulationRun{Status: storage.SimFailed}, nil, "unknown"},
		"call failed":          {failed, &storage.CallGrade{CallOutcome: s("success"), Score: n(95)}, "fail"},
		"no grade":             {done, nil, "unknown"},
		"facts only":           {done, &storage.CallGrade{Status: "completed"}, "unknown"},
		"success":              {done, &storage.CallGrade{CallOutcome: s("success"), Score: n(10)}, "pass"},
		"failure":              {done, &storage.CallGrade{CallOutcome: s("failure"), Score: n(99)}, "fail"},
		"no conversation":      {done, &storage.CallGrade{CallOutcome: s("no_conversation")}, "fail"},
		"unknown, score 70":    {done, &storage.CallGrade{CallOutcome: s("unknown"), Score: n(70)}, "pass"},
		"unknown, score 69":    {done, &storage.CallGrade{CallOutcome: s("unknown"), Score: n(69)}, "fail"},
		"unknown, no score":    {done, &storage.CallGrade{CallOutcome: s("unknown")}, "unknown"},
		"no outcome, score 80": {done, &storage.CallGrade{Score: n(80)}, "pass"},
	} {
		require.Equal(t, tc.want, simulations.Verdict(tc.run, tc.g), name)
	}
}

// TestTestRunReadWaitsForPendingGrades: a read does not settle a test
// run whose call's grade is still pending (the worker is waiting for it;
// settling would make the run unknown for good), unless the call ended
// longer than GradeWait ago.
func TestTestRunReadWaitsForPendingGrades(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 10_000)
		k := w.MembK
		ctx := context.Background()
		agent := controltest.ID(a.Agent(k, "Booker", nil))
		require.Equal(t, 201, a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, map[string]any{"title": "t", "scenario_prompt": "p"}).Status)
		r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", agent), k, map[string]any{"channel": "web", "consent_to_charge": true})
		require.Equal(t, 201, r.Status, string(r.Body))
		id := controltest.ID(r.Obj(t))
		runs, err := a.Store.Simulations.TestRunSimulations(ctx, w.Org.ID, id)
		require.NoError(t, err)
		c, err := a.Store.Calls.CreateCall(ctx, storage.Call{OrgID: w.Org.ID, Direction: storage.DirectionWeb, Status: storage.CallCompleted})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE calls SET grade_status = 'pending', end_time = $1 WHERE id = $2`, time.Now().UnixMilli(), c.ID)
		require.NoError(t, err)
		_, err = a.Store.Simulations.FinishSimulationRun(ctx, runs[0].ID, "", storage.SimulationEnd{Status: storage.SimCompleted, CallID: &c.ID})
		require.NoError(t, err)
		detail := fmt.Sprintf("/v1/agents/%d/test-runs/%d", agent, id)
		require.Equal(t, "in_progress", a.Do("GET", detail, k, nil).Obj(t)["status"], "the grade is on its way")
		// The grade arrives: the next read settles it with the verdict.
		o, score := "success", int64(95)
		_, err = a.Store.Calls.AddCallGrade(ctx, storage.CallGrade{CallID: c.ID, Status: "completed", CallOutcome: &o, Score: &score})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE calls SET grade_status = 'completed' WHERE id = $1`, c.ID)
		require.NoError(t, err)
		got := a.Do("GET", detail, k, nil).Obj(t)
		require.Equal(t, "completed", got["status"])
		require.Equal(t, "pass", got["verdict"])

		// A grade pending long after the call ended no longer holds a
		// read back.
		r = a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", agent), k, map[string]any{"channel": "web", "consent_to_charge": true})
		require.Equal(t, 201, r.Status, string(r.Body))
		id = controltest.ID(r.Obj(t))
		runs, err = a.Store.Simulations.TestRunSimulations(ctx, w.Org.ID, id)
		require.NoError(t, err)
		c, err = a.Store.Calls.CreateCall(ctx, storage.Call{OrgID: w.Org.ID, Direction: storage.DirectionWeb, Status: storage.CallCompleted})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE calls SET grade_status = 'pending', end_time = $1 WHERE id = $2`, time.Now().Add(-simulations.GradeWait-time.Second).UnixMilli(), c.ID)
		require.NoError(t, err)
		_, err = a.Store.Simulations.FinishSimulationRun(ctx, runs[0].ID, "", storage.SimulationEnd{Status: storage.SimCompleted, CallID: &c.ID})
		require.NoError(t, err)
		got = a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", agent, id), k, nil).Obj(t)
		require.Equal(t, "completed", got["status"])
		require.Equal(t, "unknown", got["verdict"])
	})
}
