package simulations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
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

// ready is the media side as the API sees it before a run starts: the
// simulated caller is there (or not). The worker is off in these tests
// (runs stay queued); cmd/voiced's TestSimulationRunsMakeRealCalls runs
// them for real through call/sim.
type ready struct{ err error }

func (r ready) Ready(string) error { return r.err }
func (r ready) Simulate(context.Context, simulations.Call) (simulations.Outcome, error) {
	return simulations.Outcome{}, errors.New("not in API tests")
}

func newAPI(t *testing.T, db *storage.DB, sim simulations.Simulator) *controltest.API {
	var opts []control.Option
	if sim != nil {
		opts = append(opts, control.WithSimulator(sim))
	}
	return controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Grading: grading.Config{NoWorker: true}, NoSimulationWorker: true}, opts...)
}

// override is a copy of base with kv's key-value pairs set (a nil value
// removes the key).
func override(base map[string]any, kv ...any) map[string]any {
	m := maps.Clone(base)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
		} else {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	return m
}

func events(t *testing.T, a *controltest.API, orgID int64, typ string) []map[string]any {
	rows, err := a.Store.DB().QueryContext(context.Background(), `SELECT data FROM webhook_events WHERE org_id = $1 AND type = $2 ORDER BY created_at`, orgID, typ)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		out = append(out, m)
	}
	return out
}

func TestSimulationRuns(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 10_000)
		k := w.MembK
		ag := a.Agent(k, "Booker", nil)
		agent := controltest.ID(ag)
		_, num := a.Trunk(w, "+13105550100")
		other := a.World()
		a.Credit(other.Org.ID, 10_000)
		foreign := controltest.ID(a.Agent(other.OwnerK, "Theirs", nil))

		base := map[string]any{"target_type": "agent", "target_id": agent, "consent_to_charge": true}
		with := func(kv ...any) map[string]any { return override(base, kv...) }

		// Validation: each bad field is a 400 naming it.
		for name, tc := range map[string]struct {
			body  map[string]any
			field string
		}{
			"consent missing":      {with("consent_to_charge", nil), "consent_to_charge"},
			"consent false":        {with("consent_to_charge", false), "consent_to_charge"},
			"consent not bool":     {with("consent_to_charge", "yes"), "consent_to_charge"},
			"target_type missing":  {with("target_type", nil), "target_type"},
			"target_type bad":      {with("target_type", "queue"), "target_type"},
			"target_id missing":    {with("target_id", nil), "target_id"},
			"target_id zero":       {with("target_id", 0), "target_id"},
			"direction":            {with("direction", "sideways"), "direction"},
			"target_number":        {with("target_number", "555-0100"), "target_number"},
			"prompt too long":      {with("scenario_prompt", strings.Repeat("x", 4001)), "scenario_prompt"},
			"language malformed":   {with("language", "not a tag!"), "language"},
			"language unsupported": {with("language", "de-DE"), "language"},
			"primary_language":     {with("primary_language", "ja"), "primary_language"},
			"product":              {with("simulator_product", "turbo"), "simulator_product"},
		} {
			r := a.Do("POST", "/v1/simulations", k, tc.body)
			require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
			require.Contains(t, r.Obj(t), tc.field, "%s: %s", name, r.Body)
		}
		require.Equal(t, 400, a.Do("POST", "/v1/simulations", k, nil).Status)

		// 404: a target outside the org, or none.
		require.Equal(t, 404, a.Do("POST", "/v1/simulations", k, with("target_id", foreign)).Status)
		require.Equal(t, 404, a.Do("POST", "/v1/simulations", k, with("target_type", "phone_number", "target_id", 999999)).Status)

		// Defaults, from an API key.
		r := a.Do("POST", "/v1/simulations", k, with("scenario_prompt", "You want a table for two."))
		require.Equal(t, 201, r.Status, string(r.Body))
		run := r.Obj(t)
		for f, v := range map[string]any{"target_type": "agent", "target_id": float64(agent), "target_name": "Booker", "agent_name": "Booker",
			"direction": "outbound", "mode": "bot", "target_number": "", "scenario_prompt": "You want a table for two.", "status": "queued",
			"charge_multiplier": 1.0, "estimated_cost_cents": float64(54), "call_id": nil, "error_message": "", "metadata": map[string]any{},
			"requested_by_id": nil, "started_at": nil, "completed_at": nil, "duration_seconds": nil, "recording_url": nil,
			"transcript": []any{}, "grade": nil, "language": "", "simulator_product": "testing"} {
			require.Equal(t, v, run[f], f)
		}
		require.NotEmpty(t, run["created_at"])
		require.NotEmpty(t, run["updated_at"])

		// Every field set, from a personal token: a phone number target
		// is a SIP run; spark costs 1.5 times; language is normalized.
		r = a.Do("POST", "/v1/simulations", w.MembT+w.OrgHdr(), map[string]any{"target_type": "phone_number", "target_id": num["id"],
			"direction": "outbound", "target_number": "+13105550199", "primary_language": "es-mx", "simulator_product": "spark", "consent_to_charge": true})
		require.Equal(t, 201, r.Status, string(r.Body))
		sip := r.Obj(t)
		require.Equal(t, "sip", sip["mode"])
		require.Equal(t, "+13105550100", sip["target_name"])
		require.Equal(t, "+13105550199", sip["target_number"])
		require.Equal(t, "es-MX", sip["language"])
		require.Equal(t, 1.5, sip["charge_multiplier"])
		require.Nil(t, sip["estimated_cost_cents"], "the number has no agent: nothing to price")
		require.Equal(t, float64(w.Member.ID), sip["requested_by_id"])

		// The list: newest first, filters, limits.
		list := a.Do("GET", "/v1/simulations", k, nil).List(t)
		require.Len(t, list, 2)
		require.Equal(t, sip["id"], list[0]["id"])
		require.Len(t, a.Do("GET", "/v1/simulations?target_type=agent", k, nil).List(t), 1)
		require.Len(t, a.Do("GET", fmt.Sprintf("/v1/simulations?target_type=phone_number&target_id=%v", num["id"]), k, nil).List(t), 1)
		require.Len(t, a.Do("GET", "/v1/simulations?status=completed", k, nil).List(t), 0)
		require.Len(t, a.Do("GET", "/v1/simulations?limit=1&offset=1", k, nil).List(t), 1)
		require.Equal(t, run["id"], a.Do("GET", "/v1/simulations?limit=1&offset=1", k, nil).List(t)[0]["id"])
		for _, q := range []string{"limit=0", "limit=501", "offset=-1", "status=done", "target_type=x", "target_id=abc"} {
			require.Equal(t, 400, a.Do("GET", "/v1/simulations?"+q, k, nil).Status, q)
		}
		require.Len(t, a.Do("GET", "/v1/simulations", other.OwnerK, nil).List(t), 0, "another org sees none")
		// The deprecated alias is the same handler.
		require.Len(t, a.Do("GET", "/v1/test-calls", k, nil).List(t), 2)

		// 429: more than 10 queued or in progress in the org.
		for i := 0; i < 8; i++ {
			require.Equal(t, 201, a.Do("POST", "/v1/test-calls", k, base).Status)
		}
		r = a.Do("POST", "/v1/simulations", k, base)
		require.Equal(t, 429, r.Status, string(r.Body))
		require.Empty(t, r.Header.Get("Retry-After"))
		require.Contains(t, r.Obj(t), "detail")
		require.Equal(t, 201, a.Do("POST", "/v1/simulations", other.OwnerK, map[string]any{"target_type": "agent", "target_id": foreign, "consent_to_charge": true}).Status,
			"the limit is per org")

		// 402: no balance.
		poor := a.World()
		pa := controltest.ID(a.Agent(poor.OwnerK, "Broke", nil))
		r = a.Do("POST", "/v1/simulations", poor.OwnerK, map[string]any{"target_type": "agent", "target_id": pa, "consent_to_charge": true})
		require.Equal(t, 402, r.Status, string(r.Body))

		// Inbound (the agent calls the simulated caller): queued like any
		// run, over telephony (a web agent places a phone call).
		a.Credit(poor.Org.ID, 100)
		r = a.Do("POST", "/v1/simulations", poor.OwnerK, map[string]any{"target_type": "agent", "target_id": pa, "consent_to_charge": true, "direction": "inbound"})
		require.Equal(t, 201, r.Status, string(r.Body))
		in := r.Obj(t)
		require.Equal(t, "inbound", in["direction"])
		require.Equal(t, "queued", in["status"])
		require.Empty(t, events(t, a, poor.Org.ID, "test-call.completed"), "nothing ended yet")
	})
}

// Without a simulated caller every run is a 502 and failed.
func TestSimulationNoSimulator(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		for _, sim := range []simulations.Simulator{nil, ready{errors.New("telephony is off")}} {
			a := newAPI(t, db, sim)
			w := a.World()
			a.Credit(w.Org.ID, 1000)
			agent := controltest.ID(a.Agent(w.OwnerK, "A", nil))
			r := a.Do("POST", "/v1/simulations", w.OwnerK, map[string]any{"target_type": "agent", "target_id": agent, "consent_to_charge": true})
			require.Equal(t, 502, r.Status, string(r.Body))
			l := a.Do("GET", "/v1/simulations", w.OwnerK, nil).List(t)
			require.Equal(t, "failed", l[0]["status"])
			require.NotEmpty(t, l[0]["error_message"])
			r = a.Do("POST", "/v1/simulations/batches", w.OwnerK, map[string]any{"target_type": "agent", "target_id": agent, "consent_to_charge": true, "count": 2})
			require.Equal(t, 502, r.Status, string(r.Body))
			b := a.Do("GET", "/v1/simulations/batches", w.OwnerK, nil).List(t)
			require.Equal(t, "failed", b[0]["status"])
			// An inbound run is a phone call whatever the target: 502
			// when telephony is off, and the run is failed and announced.
			r = a.Do("POST", "/v1/simulations", w.OwnerK, map[string]any{"target_type": "agent", "target_id": agent, "consent_to_charge": true, "direction": "inbound"})
			require.Equal(t, 502, r.Status, string(r.Body))
			l = a.Do("GET", "/v1/simulations", w.OwnerK, nil).List(t)
			require.Equal(t, "failed", l[0]["status"])
			require.Equal(t, "inbound", l[0]["direction"])
			if sim != nil {
				require.Contains(t, l[0]["error_message"], "telephony is off")
			}
			require.Len(t, events(t, a, w.Org.ID, "test-call.completed"), 4, "a run that ends, even at once, is announced")
		}
	})
}

// Runs whose completion was lost are failed when listed: queued runs 10
// minutes overdue, in-progress runs whose lease ran out a minute ago.
func TestSimulationStaleRuns(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 1000)
		agent := controltest.ID(a.Agent(w.OwnerK, "A", nil))
		ctx := context.Background()
		st := a.Store.Simulations
		mk := func(notBefore time.Time) storage.SimulationRun {
			rs, _, err := st.CreateSimulationRuns(ctx, w.Org.ID, []storage.SimulationRun{{TargetType: "agent", TargetID: &agent, Direction: "outbound",
				Mode: "bot", SimulatorProduct: "testing", ChargeMultiplier: 1, NotBefore: notBefore}}, nil, 10)
			require.NoError(t, err)
			return rs[0]
		}
		old := mk(time.Now().Add(-11 * time.Minute))
		fresh := mk(time.Now().Add(-9 * time.Minute))
		// A run claimed by a worker that died: its 1 ms lease ran out.
		lost := mk(time.Now().Add(time.Hour))
		_, err := db.ExecContext(ctx, `UPDATE simulation_runs SET not_before = 0 WHERE id = $1`, lost.ID)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE simulation_runs SET not_before = $1 WHERE id IN ($2, $3)`, time.Now().Add(time.Hour).UnixMilli(), old.ID, fresh.ID)
		require.NoError(t, err)
		c, ok, err := st.ClaimSimulationRun(ctx, "gone", time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, lost.ID, c.ID)
		_, err = db.ExecContext(ctx, `UPDATE simulation_runs SET not_before = $1 WHERE id = $2`, time.Now().Add(-11*time.Minute).UnixMilli(), old.ID)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE simulation_runs SET not_before = $1 WHERE id = $2`, time.Now().Add(-9*time.Minute).UnixMilli(), fresh.ID)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `UPDATE simulation_runs SET lease_until = $1 WHERE id = $2`, time.Now().Add(-61*time.Second).UnixMilli(), lost.ID)
		require.NoError(t, err)
		byID := map[float64]map[string]any{}
		for _, r := range a.Do("GET", "/v1/simulations", w.OwnerK, nil).List(t) {
			byID[r["id"].(float64)] = r
		}
		require.Equal(t, "failed", byID[float64(old.ID)]["status"])
		require.Contains(t, byID[float64(old.ID)]["error_message"], "completion signal was lost")
		require.Equal(t, "queued", byID[float64(fresh.ID)]["status"])
		require.Equal(t, "failed", byID[float64(lost.ID)]["status"])
	})
}

func TestSimulationBatches(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 10_000)
		k := w.OwnerK
		agent := controltest.ID(a.Agent(k, "A", nil))
		body := func(kv ...any) map[string]any {
			m := map[string]any{"target_type": "agent", "target_id": agent, "consent_to_charge": true}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		for name, tc := range map[string]struct {
			body  map[string]any
			field string
		}{
			"count 0":        {body("count", 0), "count"},
			"count 11":       {body("count", 11), "count"},
			"stagger 61":     {body("stagger_seconds", 61), "stagger_seconds"},
			"stagger -1":     {body("stagger_seconds", -1), "stagger_seconds"},
			"count mismatch": {body("scenario_prompts", []string{"a", "b"}, "count", 3), "count"},
			"both prompts":   {body("scenario_prompts", []string{"a"}, "scenario_prompt", "b"), "scenario_prompts"},
			"long prompt":    {body("scenario_prompts", []string{strings.Repeat("x", 4001)}), "scenario_prompts"},
			"consent":        {body("consent_to_charge", false), "consent_to_charge"},
		} {
			r := a.Do("POST", "/v1/simulations/batches", k, tc.body)
			require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
			require.Contains(t, r.Obj(t), tc.field, name)
		}
		require.Equal(t, 404, a.Do("POST", "/v1/simulations/batches", k, body("target_id", 999999)).Status)

		// Defaults: one run, 5 s stagger; answers at once, in progress.
		r := a.Do("POST", "/v1/simulations/batches", k, body())
		require.Equal(t, 201, r.Status, string(r.Body))
		b1 := r.Obj(t)
		for f, v := range map[string]any{"status": "in_progress", "target_type": "agent", "target_id": float64(agent), "count": float64(1),
			"stagger_seconds": float64(5), "requested_by_id": nil} {
			require.Equal(t, v, b1[f], f)
		}
		require.Len(t, b1["run_ids"], 1)

		// One run per prompt, staggered.
		r = a.Do("POST", "/v1/test-call-batches", k, body("scenario_prompts", []string{"first", "second", "third"}, "stagger_seconds", 20))
		require.Equal(t, 201, r.Status, string(r.Body))
		b2 := r.Obj(t)
		ids := b2["run_ids"].([]any)
		require.Len(t, ids, 3)
		var at []time.Time
		for i, id := range ids {
			run, err := a.Store.Simulations.SimulationRun(context.Background(), w.Org.ID, int64(id.(float64)))
			require.NoError(t, err)
			require.Equal(t, []string{"first", "second", "third"}[i], run.ScenarioPrompt)
			require.Equal(t, int64(controltest.ID(b2)), *run.BatchID)
			at = append(at, run.NotBefore)
		}
		require.Equal(t, 20*time.Second, at[1].Sub(at[0]))
		require.Equal(t, 40*time.Second, at[2].Sub(at[0]))

		// Reads: list newest first with filters, detail, 404s, alias.
		l := a.Do("GET", "/v1/simulations/batches", k, nil).List(t)
		require.Len(t, l, 2)
		require.Equal(t, b2["id"], l[0]["id"])
		require.Len(t, a.Do("GET", "/v1/simulations/batches?status=in_progress&limit=1", k, nil).List(t), 1)
		require.Len(t, a.Do("GET", "/v1/simulations/batches?status=completed", k, nil).List(t), 0)
		require.Len(t, a.Do("GET", "/v1/simulations/batches?offset=1", k, nil).List(t), 1)
		for _, q := range []string{"limit=501", "status=queued", "offset=x"} {
			require.Equal(t, 400, a.Do("GET", "/v1/simulations/batches?"+q, k, nil).Status, q)
		}
		d := a.Do("GET", fmt.Sprintf("/v1/simulations/batches/%v", b2["id"]), k, nil)
		require.Equal(t, 200, d.Status)
		require.Equal(t, ids, d.Obj(t)["run_ids"])
		require.Equal(t, 200, a.Do("GET", fmt.Sprintf("/v1/test-call-batches/%v", b2["id"]), k, nil).Status)
		require.Equal(t, 404, a.Do("GET", "/v1/simulations/batches/999999", k, nil).Status)
		require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/simulations/batches/%v", b2["id"]), a.World().OwnerK, nil).Status)

		// A batch past the org's 10 is refused whole.
		r = a.Do("POST", "/v1/simulations/batches", k, body("count", 7))
		require.Equal(t, 429, r.Status, string(r.Body))
		require.Len(t, a.Do("GET", "/v1/simulations", k, nil).List(t), 4)
	})
}

// A finished run bills the simulated caller's side on the ledger once,
// never below zero, and announces test-call.completed.
func TestSimulationFinishBillsAndAnnounces(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db, ready{})
		w := a.World()
		a.Credit(w.Org.ID, 100)
		agent := controltest.ID(a.Agent(w.OwnerK, "A", nil))
		ctx := context.Background()
		st := a.Store.Simulations
		rs, _, err := st.CreateSimulationRuns(ctx, w.Org.ID, []storage.SimulationRun{{TargetType: "agent", TargetID: &agent, Direction: "outbound",
			Mode: "bot", SimulatorProduct: "testing", ChargeMultiplier: 1}, {TargetType: "agent", TargetID: &agent, Direction: "outbound",
			Mode: "bot", SimulatorProduct: "testing", ChargeMultiplier: 1}}, nil, 10)
		require.NoError(t, err)
		ev := func(r storage.SimulationRun) ([]byte, error) {
			return json.Marshal(map[string]any{"simulation_id": r.ID, "status": r.Status})
		}
		dur := int64(42)
		f, err := st.FinishSimulationRun(ctx, rs[0].ID, "", storage.SimulationEnd{Status: storage.SimCompleted, DurationSeconds: &dur, ChargeCents: 30, Event: ev})
		require.NoError(t, err)
		require.Equal(t, int64(30), *f.ChargedCents)
		_, err = st.FinishSimulationRun(ctx, rs[0].ID, "", storage.SimulationEnd{Status: storage.SimCompleted, ChargeCents: 30, Event: ev})
		require.ErrorIs(t, err, storage.ErrConflict, "a run ends once")
		bal, err := a.Store.Billing.Balance(ctx, w.Org.ID)
		require.NoError(t, err)
		require.Equal(t, int64(70), bal)
		f, err = st.FinishSimulationRun(ctx, rs[1].ID, "", storage.SimulationEnd{Status: storage.SimCompleted, ChargeCents: 500, Event: ev})
		require.NoError(t, err)
		require.Equal(t, int64(70), *f.ChargedCents, "the charge takes what is left")
		bal, _ = a.Store.Billing.Balance(ctx, w.Org.ID)
		require.Equal(t, int64(0), bal)
		evs := events(t, a, w.Org.ID, "test-call.completed")
		require.Len(t, evs, 2)
		require.Equal(t, float64(rs[0].ID), evs[0]["simulation_id"])
		got := a.Do("GET", "/v1/simulations", w.OwnerK, nil).List(t)
		require.Equal(t, float64(42), got[1]["duration_seconds"])
		require.Equal(t, "completed", got[1]["status"])
	})
}
