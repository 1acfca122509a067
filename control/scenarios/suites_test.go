package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestSuites(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, "You book tables.")
		k := e.w.MembK
		sc := func(agent int64) int64 {
			r := e.a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), k, map[string]any{"title": "T", "scenario_prompt": "P"})
			require.Equal(t, 201, r.Status)
			return controltest.ID(r.Obj(t))
		}
		s1, s2 := sc(e.agent), sc(e.agent)
		ag2 := controltest.ID(e.a.Agent(k, "Second", nil))
		foreignSc := sc(ag2)
		_, num := e.a.Trunk(e.w, "+13105550123")
		other := e.a.World()
		otherAgent := controltest.ID(e.a.Agent(other.OwnerK, "Theirs", nil))
		_, otherNum := e.a.Trunk(other, "+13105550124")

		// Defaults.
		r := e.a.Do("POST", "/v1/suites", k, map[string]any{"name": " Nightly ", "agent_id": e.agent})
		require.Equal(t, 201, r.Status, string(r.Body))
		s := r.Obj(t)
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, s["id"])
		for k, v := range map[string]any{"name": "Nightly", "description": "", "agent_id": float64(e.agent), "scenario_ids": []any{}, "min_pass_rate": 1.0,
			"no_critical_failures": false, "schedule": "none", "channel": "web", "phone_number_id": nil, "enabled": true} {
			require.Equal(t, v, s[k], k)
		}
		id := s["id"].(string)

		// Every field set.
		r = e.a.Do("POST", "/v1/suites", k, map[string]any{"name": "Phones", "description": "d", "agent_id": e.agent, "scenario_ids": []int64{s2, s1, s2},
			"min_pass_rate": 0.8, "no_critical_failures": true, "schedule": "daily", "channel": "telephony", "phone_number_id": num["id"], "enabled": false})
		require.Equal(t, 201, r.Status, string(r.Body))
		full := r.Obj(t)
		require.Equal(t, []any{float64(s2), float64(s1)}, full["scenario_ids"])
		require.Equal(t, 0.8, full["min_pass_rate"])
		require.Equal(t, "daily", full["schedule"])
		require.Equal(t, num["id"], full["phone_number_id"])

		many := make([]int64, 51)
		for _, tc := range []struct {
			field string
			body  map[string]any
		}{
			{"name", map[string]any{"agent_id": e.agent}},
			{"name", map[string]any{"name": " ", "agent_id": e.agent}},
			{"name", map[string]any{"name": strings.Repeat("n", 121), "agent_id": e.agent}},
			{"description", map[string]any{"name": "n", "agent_id": e.agent, "description": strings.Repeat("d", 2001)}},
			{"agent_id", map[string]any{"name": "n"}},
			{"agent_id", map[string]any{"name": "n", "agent_id": otherAgent}},
			{"agent_id", map[string]any{"name": "n", "agent_id": "x"}},
			{"scenario_ids", map[string]any{"name": "n", "agent_id": e.agent, "scenario_ids": []int64{s1, foreignSc}}},
			{"scenario_ids", map[string]any{"name": "n", "agent_id": e.agent, "scenario_ids": many}},
			{"min_pass_rate", map[string]any{"name": "n", "agent_id": e.agent, "min_pass_rate": 80}},
			{"min_pass_rate", map[string]any{"name": "n", "agent_id": e.agent, "min_pass_rate": -0.1}},
			{"no_critical_failures", map[string]any{"name": "n", "agent_id": e.agent, "no_critical_failures": "yes"}},
			{"schedule", map[string]any{"name": "n", "agent_id": e.agent, "schedule": "monthly"}},
			{"channel", map[string]any{"name": "n", "agent_id": e.agent, "channel": "carrier-pigeon"}},
			{"phone_number_id", map[string]any{"name": "n", "agent_id": e.agent, "channel": "telephony"}},
			{"phone_number_id", map[string]any{"name": "n", "agent_id": e.agent, "channel": "telephony", "phone_number_id": otherNum["id"]}},
			{"enabled", map[string]any{"name": "n", "agent_id": e.agent, "enabled": 1}},
			{"colour", map[string]any{"name": "n", "agent_id": e.agent, "colour": "red"}},
		} {
			r := e.a.Do("POST", "/v1/suites", k, tc.body)
			require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
			require.Contains(t, r.Obj(t), tc.field, string(r.Body))
		}
		list := e.a.Do("GET", "/v1/suites", k, nil).List(t)
		require.Len(t, list, 2)
		require.Empty(t, e.a.Do("GET", "/v1/suites", other.OwnerK, nil).List(t))

		// PATCH a subset; a bad PATCH changes nothing.
		r = e.a.Do("PATCH", "/v1/suites/"+id, k, map[string]any{"schedule": "hourly", "min_pass_rate": 0, "scenario_ids": []int64{s1}})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, "hourly", r.Obj(t)["schedule"])
		require.Equal(t, 0.0, r.Obj(t)["min_pass_rate"])
		require.Equal(t, "Nightly", r.Obj(t)["name"])
		for _, b := range []map[string]any{{"schedule": "yearly"}, {"agent_id": ag2}, {"channel": "telephony"}, {"name": ""}} {
			require.Equal(t, 400, e.a.Do("PATCH", "/v1/suites/"+id, k, b).Status, "%v", b)
		}
		r = e.a.Do("PATCH", "/v1/suites/"+id, k, map[string]any{"agent_id": ag2, "scenario_ids": []int64{foreignSc}, "schedule": "weekly"})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, float64(ag2), r.Obj(t)["agent_id"])

		// Detail: empty runs, then the 50 most recent.
		r = e.a.Do("GET", "/v1/suites/"+id, k, nil)
		require.Equal(t, 200, r.Status)
		require.Equal(t, []any{}, r.Obj(t)["runs"])
		require.Equal(t, 200, e.a.Do("GET", "/v1/suites/"+strings.ToUpper(id), k, nil).Status)
		ctx := context.Background()
		for i := range 55 {
			_, err := e.a.Store.Scenarios.CreateTestRun(ctx, storage.TestRun{OrgID: e.w.Org.ID, AgentID: ag2, SuiteID: &id, Status: "completed", Channel: "web",
				Verdict: "pass", TotalCount: int64(i), CreatedAt: time.UnixMilli(1_700_000_000_000 + int64(i))})
			require.NoError(t, err)
		}
		runs := e.a.Do("GET", "/v1/suites/"+id, k, nil).Obj(t)["runs"].([]any)
		require.Len(t, runs, 50)
		require.Equal(t, 54.0, runs[0].(map[string]any)["total_count"])
		require.Equal(t, 5.0, runs[49].(map[string]any)["total_count"])
		require.NotContains(t, runs[0], "runs")

		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			require.Equal(t, 404, e.a.Do(m, "/v1/suites/"+id, other.OwnerK, map[string]any{"name": "x"}).Status, m)
			require.Equal(t, 404, e.a.Do(m, "/v1/suites/not-a-uuid", k, map[string]any{"name": "x"}).Status, m)
			require.Equal(t, 404, e.a.Do(m, "/v1/suites/00000000-0000-4000-8000-000000000000", k, map[string]any{"name": "x"}).Status, m)
		}
		require.Equal(t, 204, e.a.Do("DELETE", "/v1/suites/"+id, k, nil).Status)
		require.Equal(t, 404, e.a.Do("GET", "/v1/suites/"+id, k, nil).Status)
		// Its runs stay, as the agent's.
		require.Len(t, e.a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs?limit=200", ag2), k, nil).List(t), 55)
	})
}

func TestTestRuns(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, "You book tables.")
		k := e.w.MembK
		ctx := context.Background()
		path := fmt.Sprintf("/v1/agents/%d/test-runs", e.agent)
		require.Equal(t, "[]", string(e.a.Do("GET", path, k, nil).Body))

		rate := 0.5
		done := time.UnixMilli(1_700_000_100_000)
		items := json.RawMessage(`[{"scenario_id":1,"call_id":7,"verdict":"pass"},{"scenario_id":2,"call_id":8,"verdict":"fail"}]`)
		var ids []int64
		for i := range 230 {
			r, err := e.a.Store.Scenarios.CreateTestRun(ctx, storage.TestRun{OrgID: e.w.Org.ID, AgentID: e.agent, Status: "completed", Channel: "telephony",
				Verdict: "fail", TotalCount: 2, PassCount: 1, FailCount: 1, PassRate: &rate, PromptHash: "h", Runs: items,
				Regressions: json.RawMessage(`[{"scenario_id":2,"previous":"pass","current":"fail"}]`), CompletedAt: &done, CreatedAt: time.UnixMilli(1_700_000_000_000 + int64(i))})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		l := e.a.Do("GET", path, k, nil).List(t)
		require.Len(t, l, 50)
		require.Equal(t, float64(ids[229]), l[0]["id"])
		require.NotContains(t, l[0], "runs")
		for k, v := range map[string]any{"status": "completed", "channel": "telephony", "verdict": "fail", "total_count": 2.0, "pass_count": 1.0,
			"fail_count": 1.0, "pass_rate": 0.5, "prompt_hash": "h", "suite_id": nil, "completed_at": "2023-11-14T22:15:00.000Z", "agent_id": float64(e.agent)} {
			require.Equal(t, v, l[0][k], k)
		}
		require.Len(t, l[0]["regressions"], 1)
		require.Len(t, e.a.Do("GET", path+"?limit=200", k, nil).List(t), 200)
		l = e.a.Do("GET", path+"?limit=10&offset=225", k, nil).List(t)
		require.Len(t, l, 5)
		require.Equal(t, float64(ids[4]), l[0]["id"])
		for _, q := range []string{"?limit=201", "?limit=0", "?limit=x", "?offset=-1", "?offset=x"} {
			require.Equal(t, 400, e.a.Do("GET", path+q, k, nil).Status, q)
		}

		r := e.a.Do("GET", fmt.Sprint(path, "/", ids[3]), k, nil)
		require.Equal(t, 200, r.Status)
		d := r.Obj(t)
		require.Equal(t, float64(ids[3]), d["id"])
		require.Equal(t, []any{map[string]any{"scenario_id": 1.0, "call_id": 7.0, "verdict": "pass"}, map[string]any{"scenario_id": 2.0, "call_id": 8.0, "verdict": "fail"}}, d["runs"])

		// A run is reached only through its own agent and org.
		ag2 := controltest.ID(e.a.Agent(k, "Second", nil))
		require.Equal(t, 404, e.a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", ag2, ids[3]), k, nil).Status)
		other := e.a.World()
		require.Equal(t, 404, e.a.Do("GET", fmt.Sprint(path, "/", ids[3]), other.OwnerK, nil).Status)
		require.Equal(t, 404, e.a.Do("GET", path, other.OwnerK, nil).Status)
		require.Equal(t, 404, e.a.Do("GET", path+"/99999999", k, nil).Status)
		require.Equal(t, 404, e.a.Do("GET", path+"/x", k, nil).Status)
	})
}
