package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/scenarios"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// env is an API with a fake model, a World and an agent of that World.
type env struct {
	a     *controltest.API
	w     controltest.World
	model *fakeModel
	agent int64
}

func newEnv(t *testing.T, db *storage.DB, prompt string) env {
	m := newFakeModel(t)
	a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Model: llm.OpenAIConfig{BaseURL: m.URL, Model: "fake"}})
	w := a.World()
	ag := a.Agent(w.MembK, "Front desk", map[string]any{"prompt": prompt})
	return env{a: a, w: w, model: m, agent: controltest.ID(ag)}
}

func (e env) path(rest string) string {
	return fmt.Sprintf("/v1/agents/%d/test-scenarios%s", e.agent, rest)
}

func (e env) list(t *testing.T) []map[string]any {
	r := e.a.Do("GET", e.path(""), e.w.MembK, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	return r.List(t)
}

func (e env) setPrompt(t *testing.T, prompt string) {
	r := e.a.Do("PATCH", fmt.Sprintf("/v1/agents/%d", e.agent), e.w.MembK, map[string]any{"prompt": prompt})
	require.Equal(t, 200, r.Status, string(r.Body))
}

func TestScenarioCRUD(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, "You book tables.")
		k := e.w.MembK

		r := e.a.Do("POST", e.path(""), k, map[string]any{"title": "  Booking  ", "scenario_prompt": "Book a table for two."})
		require.Equal(t, 201, r.Status, string(r.Body))
		s := r.Obj(t)
		require.Equal(t, "Booking", s["title"])
		require.Equal(t, map[string]any{"noise_asset": "none", "snr_db": nil}, s["audio_conditions"])
		require.Equal(t, map[string]any{"pace": "natural", "disfluencies": "none", "accent": "default"}, s["speech_style"])
		require.Equal(t, map[string]any{"long_silence_seconds": 0.0, "dtmf_sequence": "", "topic_change": ""}, s["caller_behavior"])
		require.Equal(t, map[string]any{"voicemail_answer": false}, s["telephony"])
		require.Equal(t, []any{}, s["labels"])
		for k, v := range map[string]any{"direction": "inbound", "source": "manual", "prompt_hash": "", "latest_verdict": "unknown", "is_stale": false,
			"source_call_id": nil, "source_issue_trace_id": nil, "source_turn_index": nil, "agent_id": float64(e.agent)} {
			require.Equal(t, v, s[k], k)
		}
		id := controltest.ID(s)

		// Every limit at its edge is accepted.
		full := map[string]any{"title": strings.Repeat("é", 200), "scenario_prompt": strings.Repeat("p", 4000),
			"labels":           []string{strings.Repeat("a", 50), "b", "c", "d", "e", "f", "g", "h", "i", "j"},
			"audio_conditions": map[string]any{"noise_asset": "office", "snr_db": 0},
			"speech_style":     map[string]any{"pace": "slow", "disfluencies": "light", "accent": "fr-CA"},
			"caller_behavior":  map[string]any{"long_silence_seconds": 15, "dtmf_sequence": "0123456789*#", "topic_change": strings.Repeat("t", 500)},
			"telephony":        map[string]any{"voicemail_answer": true}, "direction": "outbound"}
		r = e.a.Do("POST", e.path(""), k, full)
		require.Equal(t, 201, r.Status, string(r.Body))
		got := r.Obj(t)
		require.Equal(t, map[string]any{"noise_asset": "office", "snr_db": 0.0}, got["audio_conditions"])
		require.Equal(t, "outbound", got["direction"])
		require.Len(t, got["labels"], 10)

		// Each bad field is a 400 naming it, and nothing is saved.
		base := func(kv ...any) map[string]any {
			b := map[string]any{"title": "T", "scenario_prompt": "P"}
			for i := 0; i < len(kv); i += 2 {
				if kv[i+1] == nil {
					delete(b, kv[i].(string))
				} else {
					b[kv[i].(string)] = kv[i+1]
				}
			}
			return b
		}
		labels11 := make([]string, 11)
		for i := range labels11 {
			labels11[i] = fmt.Sprint("l", i)
		}
		for _, tc := range []struct {
			field string
			body  any
		}{
			{"title", base("title", nil)},
			{"title", base("title", "   ")},
			{"title", base("title", strings.Repeat("x", 201))},
			{"title", base("title", 5)},
			{"scenario_prompt", base("scenario_prompt", nil)},
			{"scenario_prompt", base("scenario_prompt", strings.Repeat("x", 4001))},
			{"labels", base("labels", labels11)},
			{"labels", base("labels", []string{strings.Repeat("x", 51)})},
			{"labels", base("labels", []string{" "})},
			{"labels", base("labels", "a")},
			{"audio_conditions.noise_asset", base("audio_conditions", map[string]any{"noise_asset": "jungle", "snr_db": 5})},
			{"audio_conditions.snr_db", base("audio_conditions", map[string]any{"noise_asset": "cafe"})},
			{"audio_conditions.snr_db", base("audio_conditions", map[string]any{"noise_asset": "cafe", "snr_db": 7})},
			{"audio_conditions", base("audio_conditions", "loud")},
			{"audio_conditions.volume", base("audio_conditions", map[string]any{"volume": 3})},
			{"speech_style.pace", base("speech_style", map[string]any{"pace": "warp"})},
			{"speech_style.disfluencies", base("speech_style", map[string]any{"disfluencies": "heavy"})},
			{"speech_style.accent", base("speech_style", map[string]any{"accent": "en-NZ"})},
			{"caller_behavior.long_silence_seconds", base("caller_behavior", map[string]any{"long_silence_seconds": 16})},
			{"caller_behavior.long_silence_seconds", base("caller_behavior", map[string]any{"long_silence_seconds": -1})},
			{"caller_behavior.long_silence_seconds", base("caller_behavior", map[string]any{"long_silence_seconds": 2.5})},
			{"caller_behavior.dtmf_sequence", base("caller_behavior", map[string]any{"dtmf_sequence": "0123456789*#1"})},
			{"caller_behavior.dtmf_sequence", base("caller_behavior", map[string]any{"dtmf_sequence": "12a"})},
			{"caller_behavior.topic_change", base("caller_behavior", map[string]any{"topic_change": strings.Repeat("t", 501)})},
			{"telephony.voicemail_answer", base("telephony", map[string]any{"voicemail_answer": "yes"})},
			{"direction", base("direction", "sideways")},
			{"colour", base("colour", "red")},
			{"source", base("source", "ai")},
			{"latest_verdict", base("latest_verdict", "pass")},
		} {
			r := e.a.Do("POST", e.path(""), k, tc.body)
			require.Equal(t, 400, r.Status, "%s: %s", tc.field, r.Body)
			require.Contains(t, r.Obj(t), tc.field, string(r.Body))
		}
		for _, raw := range []string{"", "[]", "{", "null"} {
			require.Equal(t, 400, e.a.Do("POST", e.path(""), k, raw).Status, raw)
		}
		require.Len(t, e.list(t), 2)

		// GET and PATCH: a subset, nested objects merged key by key.
		r = e.a.Do("GET", e.path(fmt.Sprint("/", id)), k, nil)
		require.Equal(t, 200, r.Status)
		require.Equal(t, "Booking", r.Obj(t)["title"])
		r = e.a.Do("PATCH", e.path(fmt.Sprint("/", id)), k, map[string]any{"speech_style": map[string]any{"accent": "en-AU"},
			"audio_conditions": map[string]any{"noise_asset": "car", "snr_db": 20}, "labels": []string{"a", "a", "b"}})
		require.Equal(t, 200, r.Status, string(r.Body))
		s = r.Obj(t)
		require.Equal(t, map[string]any{"pace": "natural", "disfluencies": "none", "accent": "en-AU"}, s["speech_style"])
		require.Equal(t, []any{"a", "b"}, s["labels"])
		require.Equal(t, "Booking", s["title"])
		r = e.a.Do("PATCH", e.path(fmt.Sprint("/", id)), k, map[string]any{"speech_style": map[string]any{"pace": "fast"}})
		require.Equal(t, map[string]any{"pace": "fast", "disfluencies": "none", "accent": "en-AU"}, r.Obj(t)["speech_style"])
		// Back to no noise drops the SNR.
		r = e.a.Do("PATCH", e.path(fmt.Sprint("/", id)), k, map[string]any{"audio_conditions": map[string]any{"noise_asset": "none"}})
		require.Equal(t, map[string]any{"noise_asset": "none", "snr_db": nil}, r.Obj(t)["audio_conditions"])
		// A bad PATCH changes nothing.
		for _, b := range []map[string]any{{"title": ""}, {"caller_behavior": map[string]any{"dtmf_sequence": "x"}}, {"prompt_hash": "x"}, {"nope": 1},
			{"audio_conditions": map[string]any{"noise_asset": "street"}}} {
			r = e.a.Do("PATCH", e.path(fmt.Sprint("/", id)), k, b)
			require.Equal(t, 400, r.Status, "%v: %s", b, r.Body)
		}
		r = e.a.Do("GET", e.path(fmt.Sprint("/", id)), k, nil)
		require.Equal(t, s["title"], r.Obj(t)["title"])
		require.Equal(t, map[string]any{"noise_asset": "none", "snr_db": nil}, r.Obj(t)["audio_conditions"])

		// Another org sees none of it.
		other := e.a.World()
		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			require.Equal(t, 404, e.a.Do(m, e.path(fmt.Sprint("/", id)), other.OwnerK, map[string]any{"title": "x"}).Status, m)
		}
		require.Equal(t, 404, e.a.Do("GET", e.path(""), other.OwnerK, nil).Status)
		require.Equal(t, 404, e.a.Do("POST", e.path(""), other.OwnerK, map[string]any{"title": "T", "scenario_prompt": "P"}).Status)
		// Nor is a scenario reachable under another agent.
		ag2 := controltest.ID(e.a.Agent(k, "Second", nil))
		require.Equal(t, 404, e.a.Do("GET", fmt.Sprintf("/v1/agents/%d/test-scenarios/%d", ag2, id), k, nil).Status)
		require.Equal(t, 404, e.a.Do("GET", e.path("/abc"), k, nil).Status)
		require.Equal(t, 404, e.a.Do("GET", "/v1/agents/999999/test-scenarios", k, nil).Status)

		require.Equal(t, 204, e.a.Do("DELETE", e.path(fmt.Sprint("/", id)), k, nil).Status)
		require.Equal(t, 404, e.a.Do("GET", e.path(fmt.Sprint("/", id)), k, nil).Status)
		require.Equal(t, 404, e.a.Do("DELETE", e.path(fmt.Sprint("/", id)), k, nil).Status)
		require.Len(t, e.list(t), 1)
	})
}

func TestGenerate(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, "You book tables.")
		k := e.w.MembK

		r := e.a.Do("POST", e.path("/generate"), k, nil)
		require.Equal(t, 201, r.Status, string(r.Body))
		var out struct{ Scenarios []map[string]any }
		require.NoError(t, json.Unmarshal(r.Body, &out))
		require.Len(t, out.Scenarios, 6)
		hash := scenarios.PromptHash("You book tables.")
		for _, s := range out.Scenarios {
			require.Equal(t, "ai", s["source"])
			require.Equal(t, hash, s["prompt_hash"])
			require.Equal(t, false, s["is_stale"])
			require.Equal(t, "unknown", s["latest_verdict"])
			require.Equal(t, map[string]any{"noise_asset": "street", "snr_db": 5.0}, s["audio_conditions"])
		}
		require.Equal(t, map[string]any{"voicemail_answer": true}, out.Scenarios[0]["telephony"])
		req := e.model.requests()[0]
		require.Contains(t, req, "Write 6 test scenarios")
		require.Contains(t, req, "Include edge cases")
		require.Contains(t, req, `locale "en"`)
		require.Contains(t, req, "You book tables.")

		r = e.a.Do("POST", e.path("/generate"), k, map[string]any{"count": 2, "include_edge_cases": false, "locale": "fr-CA"})
		require.Equal(t, 201, r.Status, string(r.Body))
		require.NoError(t, json.Unmarshal(r.Body, &out))
		require.Len(t, out.Scenarios, 2)
		require.Contains(t, out.Scenarios[0]["scenario_prompt"], "edge=false")
		require.Contains(t, e.model.requests()[1], `locale "fr-CA"`)
		require.Len(t, e.list(t), 8)

		// Bad requests never reach the model.
		n := len(e.model.requests())
		for _, tc := range []struct {
			field string
			body  any
		}{{"count", map[string]any{"count": 0}}, {"count", map[string]any{"count": 13}}, {"count", map[string]any{"count": "six"}},
			{"include_edge_cases", map[string]any{"include_edge_cases": "yes"}}, {"locale", map[string]any{"locale": "!!"}},
			{"locale", map[string]any{"locale": 5}}, {"tone", map[string]any{"tone": "fun"}}} {
			r := e.a.Do("POST", e.path("/generate"), k, tc.body)
			require.Equal(t, 400, r.Status, "%v", tc.body)
			require.Contains(t, r.Obj(t), tc.field)
		}
		require.Len(t, e.model.requests(), n)
		require.Equal(t, 12, countOf(t, e.a.Do("POST", e.path("/generate"), k, map[string]any{"count": 12})))

		// A model that writes more than asked gives the count asked; a
		// fenced reply is read.
		e.setPrompt(t, "You book tables. model:many model:fenced")
		require.Equal(t, 3, countOf(t, e.a.Do("POST", e.path("/generate"), k, map[string]any{"count": 3})))

		// Out-of-range fields are clamped.
		e.setPrompt(t, "model:wild")
		r = e.a.Do("POST", e.path("/generate"), k, map[string]any{"count": 2})
		require.Equal(t, 201, r.Status, string(r.Body))
		require.NoError(t, json.Unmarshal(r.Body, &out))
		s := out.Scenarios[0]
		require.Len(t, []rune(s["title"].(string)), 200)
		require.Len(t, s["scenario_prompt"], 4000)
		require.Len(t, s["labels"], 10)
		require.Len(t, s["labels"].([]any)[0], 50)
		require.Equal(t, "0"+strings.Repeat("l", 49), s["labels"].([]any)[0])
		require.Equal(t, map[string]any{"noise_asset": "none", "snr_db": nil}, s["audio_conditions"])
		require.Equal(t, map[string]any{"pace": "natural", "disfluencies": "none", "accent": "default"}, s["speech_style"])
		require.Equal(t, map[string]any{"long_silence_seconds": 15.0, "dtmf_sequence": "1234#*567890", "topic_change": strings.Repeat("x", 500)}, s["caller_behavior"])
		require.Equal(t, map[string]any{"voicemail_answer": false}, s["telephony"])
		require.Equal(t, "inbound", s["direction"])
		require.Equal(t, map[string]any{"noise_asset": "cafe", "snr_db": 5.0}, out.Scenarios[1]["audio_conditions"])
		require.Equal(t, 0.0, out.Scenarios[1]["caller_behavior"].(map[string]any)["long_silence_seconds"])

		// Model failure or an unusable reply: 502, nothing saved.
		before := len(e.list(t))
		for _, p := range []string{"model:down", "model:prose", "model:trailing", "model:empty"} {
			e.setPrompt(t, p)
			r := e.a.Do("POST", e.path("/generate"), k, map[string]any{"count": 2})
			require.Equal(t, 502, r.Status, "%s: %s", p, r.Body)
			require.NotEmpty(t, r.Obj(t)["detail"])
		}
		require.Len(t, e.list(t), before)

		// Changing the agent prompt makes ai scenarios stale, never manual ones.
		e.setPrompt(t, "You book tables and take complaints.")
		r = e.a.Do("POST", e.path(""), k, map[string]any{"title": "Manual", "scenario_prompt": "P"})
		require.Equal(t, 201, r.Status)
		for _, s := range e.list(t) {
			require.Equal(t, s["source"] != "manual", s["is_stale"], s["title"])
		}

		// Another org's agent: 404 before any model call.
		n = len(e.model.requests())
		require.Equal(t, 404, e.a.Do("POST", e.path("/generate"), e.a.World().OwnerK, nil).Status)
		require.Len(t, e.model.requests(), n)
	})
}

func countOf(t *testing.T, r controltest.Resp) int {
	require.Equal(t, 201, r.Status, string(r.Body))
	var out struct{ Scenarios []map[string]any }
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return len(out.Scenarios)
}

func TestNoModel(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.New(t, db)
		w := a.World()
		ag := controltest.ID(a.Agent(w.MembK, "A", nil))
		r := a.Do("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios/generate", ag), w.MembK, nil)
		require.Equal(t, 503, r.Status, string(r.Body))
		require.Contains(t, r.Obj(t)["detail"], "No model is configured")
	})
}

func TestRefresh(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, "Prompt one.")
		k := e.w.MembK
		require.Equal(t, 12, countOf(t, e.a.Do("POST", e.path("/generate"), k, map[string]any{"count": 12})))
		require.Equal(t, 3, countOf(t, e.a.Do("POST", e.path("/generate"), k, map[string]any{"count": 3})))
		r := e.a.Do("POST", e.path(""), k, map[string]any{"title": "Manual", "scenario_prompt": "Mine."})
		require.Equal(t, 201, r.Status)
		manual := controltest.ID(r.Obj(t))
		all := e.list(t)
		ai := controltest.ID(all[0])

		// Nothing stale: only_stale refreshes nothing, without the model.
		n := len(e.model.requests())
		r = e.a.Do("POST", e.path("/refresh"), k, map[string]any{"only_stale": true})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, `{"scenarios":[]}`, string(r.Body))
		require.Len(t, e.model.requests(), n)

		e.setPrompt(t, "Prompt two.")
		hash2 := scenarios.PromptHash("Prompt two.")
		ids51 := make([]int64, 51)
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"scenario_ids": []int64{manual}}, "is manual"},
			{map[string]any{"scenario_ids": []int64{999999}}, "not one of this agent's"},
			{map[string]any{"scenario_ids": ids51}, "At most 50"},
			{map[string]any{"scenario_ids": "all"}, "list"},
			{map[string]any{"only_stale": "yes"}, "boolean"},
			{map[string]any{"force": true}, "Unknown"},
		} {
			r := e.a.Do("POST", e.path("/refresh"), k, tc.body)
			require.Equal(t, 400, r.Status, "%v", tc.body)
			require.Contains(t, string(r.Body), tc.msg)
		}
		require.Len(t, e.model.requests(), n)

		// One named scenario.
		r = e.a.Do("POST", e.path("/refresh"), k, map[string]any{"scenario_ids": []int64{ai, ai}})
		require.Equal(t, 200, r.Status, string(r.Body))
		var out struct{ Scenarios []map[string]any }
		require.NoError(t, json.Unmarshal(r.Body, &out))
		require.Len(t, out.Scenarios, 1)
		s := out.Scenarios[0]
		require.Equal(t, fmt.Sprint("Refreshed prompt for scenario ", ai), s["scenario_prompt"])
		require.Equal(t, fmt.Sprint("Refreshed ", ai), s["title"])
		require.Equal(t, hash2, s["prompt_hash"])
		require.Equal(t, false, s["is_stale"])
		require.Equal(t, all[0]["audio_conditions"], s["audio_conditions"], "refresh keeps the conditions")
		require.Contains(t, e.model.requests()[n], "Prompt two.")

		// A failing model (or one that leaves a scenario out) changes nothing.
		for _, p := range []string{"model:down", "model:partial", "model:prose"} {
			e.setPrompt(t, p)
			r := e.a.Do("POST", e.path("/refresh"), k, nil)
			require.Equal(t, 502, r.Status, "%s: %s", p, r.Body)
		}
		after := e.list(t)
		for i := range all[1:] {
			require.Equal(t, all[i+1]["scenario_prompt"], after[i+1]["scenario_prompt"])
			require.Equal(t, all[i+1]["prompt_hash"], after[i+1]["prompt_hash"])
		}

		// only_stale: the 14 left, over two model requests (12 + 2).
		e.setPrompt(t, "Prompt two.")
		n = len(e.model.requests())
		r = e.a.Do("POST", e.path("/refresh"), k, map[string]any{"only_stale": true})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.NoError(t, json.Unmarshal(r.Body, &out))
		require.Len(t, out.Scenarios, 14)
		require.Len(t, e.model.requests(), n+2)
		for _, s := range out.Scenarios {
			require.NotEqual(t, float64(ai), s["id"])
			require.Equal(t, hash2, s["prompt_hash"])
		}

		// Empty body: every ai and production scenario, never the manual one.
		e.setPrompt(t, "Prompt three.")
		r = e.a.Do("POST", e.path("/refresh"), k, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		require.NoError(t, json.Unmarshal(r.Body, &out))
		require.Len(t, out.Scenarios, 15)
		for _, s := range e.list(t) {
			if controltest.ID(s) == manual {
				require.Equal(t, "Mine.", s["scenario_prompt"])
				continue
			}
			require.Equal(t, false, s["is_stale"])
		}
		require.Equal(t, 404, e.a.Do("POST", e.path("/refresh"), e.a.World().OwnerK, nil).Status)
	})
}

// callWithTurns stores a finished call of agent (nil: none) with turns
// alternating caller (even) and agent (odd).
func callWithTurns(t *testing.T, st *storage.Store, orgID int64, agent *int64, turns int) int64 {
	ctx := context.Background()
	c, err := st.Calls.CreateCall(ctx, storage.Call{OrgID: orgID, AgentID: agent, Direction: storage.DirectionInbound, FromNumber: "+14155550123",
		ToNumber: "+14155550100", Status: storage.CallCompleted, StartTime: time.Now()})
	require.NoError(t, err)
	var evs []storage.CallEventRow
	for i := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		data, _ := json.Marshal(map[string]any{"role": role, "text": fmt.Sprint("turn text ", i)})
		evs = append(evs, storage.CallEventRow{Kind: "turn", At: time.Now(), Data: data})
	}
	if len(evs) > 0 {
		_, err = st.Calls.AppendCallEvents(ctx, c.ID, evs)
		require.NoError(t, err)
	}
	return c.ID
}

func TestPromote(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, "You book tables.")
		k := e.w.MembK
		call := callWithTurns(t, e.a.Store, e.w.Org.ID, &e.agent, 12)
		path := fmt.Sprintf("/v1/calls/%d/promote-to-scenario", call)
		const trace = "0b6f1a52-3c1e-4f7e-9a53-8d3a4c2b1e00"

		n := len(e.model.requests())
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"failing_turn_index": 4}, "caller's"},
			{map[string]any{"failing_turn_index": 12}, "Out of range"},
			{map[string]any{"failing_turn_index": -1}, "at least 0"},
			{map[string]any{"failing_turn_index": "5"}, "at least 0"},
			{map[string]any{"issue_trace_id": "not-a-uuid"}, "UUID"},
			{map[string]any{"title": "x"}, "Unknown"},
		} {
			r := e.a.Do("POST", path, k, tc.body)
			require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
			require.Contains(t, string(r.Body), tc.msg)
		}
		require.Len(t, e.model.requests(), n)

		r := e.a.Do("POST", path, k, map[string]any{"issue_trace_id": trace, "failing_turn_index": 5})
		require.Equal(t, 201, r.Status, string(r.Body))
		s := r.Obj(t)
		require.Equal(t, "production", s["source"])
		require.Equal(t, float64(call), s["source_call_id"])
		require.Equal(t, trace, s["source_issue_trace_id"])
		require.Equal(t, 5.0, s["source_turn_index"])
		require.Equal(t, scenarios.PromptHash("You book tables."), s["prompt_hash"])
		require.Equal(t, "Recreate turns 2,3,4,5,6,7,8 focus=true", s["scenario_prompt"], "3 turns either side of the failing one")
		require.Equal(t, "en-IN", s["speech_style"].(map[string]any)["accent"])
		require.Equal(t, float64(e.agent), s["agent_id"])

		// The same call and issue again: 200 with that scenario, no model call.
		n = len(e.model.requests())
		r = e.a.Do("POST", path, k, map[string]any{"issue_trace_id": strings.ToUpper(trace), "failing_turn_index": 1})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, s["id"], r.Obj(t)["id"])
		require.Len(t, e.model.requests(), n)

		// The call without an issue is another promotion: the whole
		// transcript, no focus.
		r = e.a.Do("POST", path, k, nil)
		require.Equal(t, 201, r.Status, string(r.Body))
		whole := r.Obj(t)
		require.Equal(t, "Recreate turns 0,1,2,3,4,5,6,7,8,9,10,11 focus=false", whole["scenario_prompt"])
		require.Nil(t, whole["source_issue_trace_id"])
		require.NotEqual(t, s["id"], whole["id"])
		r = e.a.Do("POST", path, k, map[string]any{})
		require.Equal(t, 200, r.Status)
		require.Equal(t, whole["id"], r.Obj(t)["id"])

		// Edge of the window at the start of the call.
		r = e.a.Do("POST", fmt.Sprintf("/v1/calls/%d/promote-to-scenario", callWithTurns(t, e.a.Store, e.w.Org.ID, &e.agent, 12)), k, map[string]any{"failing_turn_index": 1})
		require.Equal(t, 201, r.Status, string(r.Body))
		require.Equal(t, "Recreate turns 0,1,2,3,4 focus=true", r.Obj(t)["scenario_prompt"])

		// Another org's call and an unknown call: 404.
		require.Equal(t, 404, e.a.Do("POST", path, e.a.World().OwnerK, nil).Status)
		require.Equal(t, 404, e.a.Do("POST", "/v1/calls/99999999/promote-to-scenario", k, nil).Status)
		// A call with no agent, or no transcript: 422.
		require.Equal(t, 422, e.a.Do("POST", fmt.Sprintf("/v1/calls/%d/promote-to-scenario", callWithTurns(t, e.a.Store, e.w.Org.ID, nil, 4)), k, nil).Status)
		empty := fmt.Sprintf("/v1/calls/%d/promote-to-scenario", callWithTurns(t, e.a.Store, e.w.Org.ID, &e.agent, 0))
		require.Equal(t, 422, e.a.Do("POST", empty, k, nil).Status)
		r = e.a.Do("POST", empty, k, map[string]any{"failing_turn_index": 0})
		require.Equal(t, 400, r.Status)
		require.Contains(t, string(r.Body), "no turns")

		// A model failure: 502, nothing saved.
		before := len(e.list(t))
		e.setPrompt(t, "model:down")
		r = e.a.Do("POST", fmt.Sprintf("/v1/calls/%d/promote-to-scenario", callWithTurns(t, e.a.Store, e.w.Org.ID, &e.agent, 4)), k, nil)
		require.Equal(t, 502, r.Status, string(r.Body))
		require.Len(t, e.list(t), before)
		// The promoted scenarios are stale now, being production ones.
		for _, sc := range e.list(t) {
			require.Equal(t, true, sc["is_stale"])
		}
		// Refresh takes production scenarios too, keeping their provenance.
		e.setPrompt(t, "You book tables and rooms.")
		r = e.a.Do("POST", e.path("/refresh"), k, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		var out struct{ Scenarios []map[string]any }
		require.NoError(t, json.Unmarshal(r.Body, &out))
		require.Len(t, out.Scenarios, before)
		for _, sc := range out.Scenarios {
			require.Equal(t, false, sc["is_stale"])
			require.Equal(t, "production", sc["source"])
			require.Contains(t, sc["scenario_prompt"], "Refreshed prompt")
			require.NotNil(t, sc["source_call_id"])
		}
	})
}

// TestIssueLinks: a scenario promoted from an issue report shows in that
// report's linked_test_cases; the report is regression-guarded only when
// every linked scenario passes.
func TestIssueLinks(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, "You book tables.")
		k := e.w.MembK
		call := callWithTurns(t, e.a.Store, e.w.Org.ID, &e.agent, 8)
		report := func(title string) string {
			r := e.a.Do("POST", fmt.Sprintf("/v1/calls/%d/issue-reports", call), k, map[string]any{"title": title, "severity": "critical"})
			require.Equal(t, 201, r.Status, string(r.Body))
			return r.Obj(t)["trace_id"].(string)
		}
		linked, other := report("Booked the wrong day"), report("Too slow")
		get := func(trace string) map[string]any {
			r := e.a.Do("GET", fmt.Sprintf("/v1/calls/%d/issue-reports", call), k, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			for _, x := range r.List(t) {
				if x["trace_id"] == trace {
					return x
				}
			}
			t.Fatalf("report %s not listed", trace)
			return nil
		}
		require.Empty(t, get(linked)["linked_test_cases"])
		require.Equal(t, false, get(linked)["regression_guarded"])

		r := e.a.Do("POST", fmt.Sprintf("/v1/calls/%d/promote-to-scenario", call), k, map[string]any{"issue_trace_id": strings.ToUpper(linked), "failing_turn_index": 3})
		require.Equal(t, 201, r.Status, string(r.Body))
		sc := r.Obj(t)

		got := get(linked)
		cases := got["linked_test_cases"].([]any)
		require.Len(t, cases, 1)
		c := cases[0].(map[string]any)
		require.Equal(t, sc["id"], c["id"])
		require.Equal(t, float64(e.agent), c["agent_id"])
		require.Equal(t, sc["title"], c["title"])
		require.Equal(t, "production", c["source"])
		require.Equal(t, "unknown", c["latest_verdict"])
		require.NotEmpty(t, c["created_at"])
		require.Equal(t, false, got["regression_guarded"], "an unknown verdict guards nothing")
		require.Empty(t, get(other)["linked_test_cases"], "only the report it was promoted from")

		// Once the scenario passes, the report is guarded; the org-wide
		// list says the same.
		s, err := e.a.Store.Scenarios.Scenario(context.Background(), e.w.Org.ID, e.agent, int64(sc["id"].(float64)))
		require.NoError(t, err)
		s.LatestVerdict = "pass"
		_, err = e.a.Store.Scenarios.UpdateScenarios(context.Background(), []storage.Scenario{s})
		require.NoError(t, err)
		require.Equal(t, true, get(linked)["regression_guarded"])
		r = e.a.Do("GET", "/v1/issue-reports?call_id="+fmt.Sprint(call), k, nil)
		require.Equal(t, 200, r.Status)
		var guarded int
		for _, x := range r.Obj(t)["results"].([]any) {
			if x.(map[string]any)["regression_guarded"] == true {
				guarded++
			}
		}
		require.Equal(t, 1, guarded)
	})
}
