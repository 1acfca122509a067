package grading_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/calltest"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/grading"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// judge is a scripted OpenAI-compatible chat server at the model
// boundary: it streams Reply, or fails with Status.
type judge struct {
	mu       sync.Mutex
	reply    string
	status   int
	requests []string
}

func (j *judge) set(reply string, status int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reply, j.status = reply, status
}

func (j *judge) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.requests)
}

func newJudge(t *testing.T) (*judge, string) {
	j := &judge{status: 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		j.mu.Lock()
		j.requests = append(j.requests, string(b))
		reply, status := j.reply, j.status
		j.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if status != 200 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":{"message":"judge is down","type":"server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// Two deltas, as a real server splits an answer.
		half := len(reply) / 2
		for _, part := range []string{reply[:half], reply[half:]} {
			d, _ := json.Marshal(part)
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", d)
		}
		_, _ = io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return j, srv.URL + "/v1"
}

const goodReply = `{"call_outcome":"success","score":82,"outcome_reasoning":"The appointment was moved to Thursday.",
"summary":"Caller rescheduled.","rubric_breakdown":{"task_completion":9,"accuracy":8,"instruction_following":8,"conversation_flow":6,"tone":9},
"detected_issues":[{"turn_index":2,"severity":"critical","title":"Talked over the caller","what_went_wrong":"The agent kept talking while the caller answered.","suggested_fix":"Keep questions short and stop at barge-in."}]}`

func server(t *testing.T, db *storage.DB, cfg grading.Config) *controltest.Resources {
	r := &controltest.Resources{BlobDir: t.TempDir(), Dialer: &controltest.Dialer{}, Verifier: &controltest.Verifier{}}
	r.API = controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Resources: control.ResourcesConfig{
		DIDPool: controltest.Pool, BlobDir: r.BlobDir, SigningKey: controltest.SigningKey}, Model: cfg.Model, Grading: cfg},
		control.WithDialer(r.Dialer), control.WithVoIPVerifier(r.Verifier))
	return r
}

func events(t *testing.T, a *controltest.Resources, orgID int64, typ string) []map[string]any {
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

// failedToolCall makes a finished call whose reschedule tool failed.
func failedToolCall(t *testing.T, a *controltest.Resources, o controltest.CallOrg) int64 {
	log := a.Srv.CallLog()
	start := time.Now().Add(-20 * time.Second).Truncate(time.Millisecond)
	cid := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number, Start: start, Turns: calltest.Conversation(), InProgress: true})
	require.NoError(t, log.Append(context.Background(), cid, []calllog.CallEvent{
		{ID: "tc", Kind: calllog.EventToolCall, At: start.Add(13 * time.Second), ToolCallID: "call_9", ToolName: "reschedule", Arguments: json.RawMessage(`{}`)},
		{ID: "tr", Kind: calllog.EventToolResult, At: start.Add(14 * time.Second), ToolCallID: "call_9", ToolName: "reschedule", Output: "HTTP 503", IsError: true},
	}))
	loss, dead, talk := 0.4, int64(12_500), int64(800)
	q := &calllog.CallQuality{LossPercent: &loss, DeadAirMS: &dead, TalkOverMS: &talk, ResponseLatencyMS: &calllog.ResponseLatency{P50: 700, P95: 1200, Max: 1500, Turns: 2}}
	require.NoError(t, log.Finish(context.Background(), cid, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: start.Add(15 * time.Second), Quality: q}))
	return cid
}

func TestGradeRoute(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		j, url := newJudge(t)
		a := server(t, db, grading.Config{Model: llm.OpenAIConfig{BaseURL: url, Model: "judge-1"}, NoWorker: true})
		o := a.CallOrg("+13105550400")
		cid := failedToolCall(t, a, o)
		gp := fmt.Sprintf("/v1/calls/%d/grade", cid)

		t.Run("in progress is 409, other org and unknown are 404", func(t *testing.T) {
			live := calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{To: o.Number, Turns: calltest.Conversation(), InProgress: true})
			r := a.Do("POST", fmt.Sprintf("/v1/calls/%d/grade", live), o.MembK, nil)
			require.Equal(t, 409, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t)["detail"], "in progress")
			require.Equal(t, 404, a.Do("POST", gp, a.World().OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("POST", "/v1/calls/999999/grade", o.MembK, nil).Status)
			require.Equal(t, 404, a.Do("POST", "/v1/calls/x/grade", o.MembK, nil).Status)
			require.Equal(t, 0, j.count(), "no judge call for refused grades")
		})

		t.Run("a valid judge reply plus measured facts", func(t *testing.T) {
			j.set(goodReply, 200)
			r := a.Do("POST", gp, o.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			g := r.Obj(t)
			require.Equal(t, "completed", g["status"])
			require.Equal(t, float64(82), g["score"])
			require.Equal(t, "success", g["call_outcome"])
			require.Equal(t, "judge-1", g["grader_model"])
			require.Equal(t, grading.Version, g["grader_version"])
			require.NotNil(t, g["graded_at"])
			rb := g["rubric_breakdown"].(map[string]any)
			require.Equal(t, true, rb["judge_ran"])
			require.Equal(t, float64(9), rb["judge"].(map[string]any)["task_completion"])
			m := rb["measured"].(map[string]any)
			require.Equal(t, "caller_hangup", m["end_reason"])
			require.Equal(t, float64(4), m["turns"])
			require.Len(t, m["tool_errors"], 1)
			mq := m["quality"].(map[string]any)
			require.Equal(t, 12500.0, mq["dead_air_ms"])
			require.Equal(t, 800.0, mq["talk_over_ms"])
			require.Equal(t, 0.4, mq["loss_percent"])
			require.Equal(t, 1200.0, mq["response_latency_ms"].(map[string]any)["p95"])
			issues := g["detected_issues"].([]any)
			require.Len(t, issues, 3, "measured tool error and dead air (loss, talk-over, latency under thresholds), one judge finding")
			var refs []string
			for _, x := range issues {
				refs = append(refs, x.(map[string]any)["ref"].(string))
			}
			require.Contains(t, refs, "quality:dead_air")
			require.Contains(t, refs, "tool_error:call_9:reschedule")
			// The judge saw the transcript, the prompt and the facts.
			require.Contains(t, j.requests[0], "Answer for Acme Dental.")
			require.Contains(t, j.requests[0], "Thursday, please.")
			require.Contains(t, j.requests[0], "HTTP 503")

			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)
			require.Equal(t, float64(82), c["grade_score"])
			require.Equal(t, "completed", c["grade_status"])
			require.Equal(t, "success", c["call_outcome"])
			require.NotNil(t, c["grade_updated_at"])
			require.Equal(t, float64(3), c["issue_count"])
			require.Equal(t, float64(1), c["critical_issue_count"])
			got := a.Do("GET", gp, o.MembK, nil).Obj(t)
			require.Equal(t, g["id"], got["id"])

			l := a.Do("GET", fmt.Sprintf("/v1/calls/%d/issue-reports", cid), o.MembK, nil).List(t)
			require.Len(t, l, 3)
			require.Equal(t, "critical", l[0]["severity"])
			require.Equal(t, "system", l[0]["source"])
			require.Equal(t, float64(2), l[0]["failing_turn_index"])
			require.Equal(t, "The agent kept talking while the caller answered.", l[0]["what_went_wrong"])
			require.Equal(t, "Keep questions short and stop at barge-in.", l[0]["suggested_fix"])
			require.Nil(t, l[0]["reported_by_id"])
			require.NotEmpty(t, l[0]["detected_issue_ref"])
			require.Equal(t, "warning", l[1]["severity"])
			require.Contains(t, l[1]["title"], "reschedule")
			require.Len(t, events(t, a, o.Org.ID, "call.graded"), 1)
			require.Len(t, events(t, a, o.Org.ID, "issue.reported"), 3)
		})

		t.Run("re-grading files no duplicate issues", func(t *testing.T) {
			r := a.Do("POST", gp, o.OwnerK, nil)
			require.Equal(t, 200, r.Status)
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)
			require.Equal(t, float64(3), c["issue_count"])
			ev := events(t, a, o.Org.ID, "call.graded")
			require.Len(t, ev, 2, "call.graded once per grade")
			require.Equal(t, float64(0), ev[1]["new_issue_count"])
			require.Len(t, events(t, a, o.Org.ID, "issue.reported"), 3)
		})

		for _, tc := range []struct{ name, reply, reason string }{
			{"not JSON", "I think the call went fine.", "not a JSON object"},
			{"missing field", `{"call_outcome":"success","score":50}`, "missing outcome_reasoning"},
			{"bad outcome", strings.Replace(goodReply, `"success"`, `"great"`, 1), "call_outcome must be"},
			{"score out of range", strings.Replace(goodReply, `82`, `182`, 1), "score must be 0-100"},
			{"turn out of range", strings.Replace(goodReply, `"turn_index":2`, `"turn_index":40`, 1), "turn_index out of range"},
			{"null score", strings.Replace(goodReply, `82`, `null`, 1), "score has the wrong type"},
			{"fractional score", strings.Replace(goodReply, `82`, `82.5`, 1), "wrong field type"},
			{"fenced but truncated", "```json\n" + goodReply[:40], "not a JSON object"},
			{"bad severity", strings.Replace(goodReply, `"critical"`, `"fatal"`, 1), "severity must be"},
		} {
			t.Run("malformed reply: "+tc.name, func(t *testing.T) {
				j.set(tc.reply, 200)
				r := a.Do("POST", gp, o.MembK, nil)
				require.Equal(t, 200, r.Status, string(r.Body))
				g := r.Obj(t)
				require.Equal(t, "failed", g["status"])
				require.Nil(t, g["score"])
				require.Contains(t, g["outcome_reasoning"], "malformed reply")
				require.Contains(t, g["outcome_reasoning"], tc.reason)
				c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)
				require.Equal(t, "failed", c["grade_status"])
				require.Nil(t, c["grade_score"])
				require.Equal(t, float64(3), c["issue_count"], "a failed grade keeps the reports filed before")
			})
		}

		t.Run("model down", func(t *testing.T) {
			j.set("", 500)
			g := a.Do("POST", gp, o.MembK, nil).Obj(t)
			require.Equal(t, "failed", g["status"])
			require.Contains(t, g["outcome_reasoning"], "model unreachable")
		})

		t.Run("no conversation: no judge", func(t *testing.T) {
			n := j.count()
			silent := calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{To: o.Number,
				Turns: []calltest.Turn{{Role: "assistant", Text: "Hello?", Length: time.Second}}})
			g := a.Do("POST", fmt.Sprintf("/v1/calls/%d/grade", silent), o.MembK, nil).Obj(t)
			require.Equal(t, "completed", g["status"])
			require.Equal(t, "no_conversation", g["call_outcome"])
			require.Nil(t, g["score"])
			require.Equal(t, n, j.count())
		})
	})
}

func TestGradeWithoutModel(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := server(t, db, grading.Config{NoWorker: true})
		o := a.CallOrg("+13105550401")
		cid := failedToolCall(t, a, o)
		r := a.Do("POST", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		g := r.Obj(t)
		require.Equal(t, "completed", g["status"])
		require.Nil(t, g["score"])
		require.Nil(t, g["call_outcome"])
		require.Equal(t, "", g["grader_model"])
		require.Contains(t, g["outcome_reasoning"], "No judge ran")
		rb := g["rubric_breakdown"].(map[string]any)
		require.Equal(t, false, rb["judge_ran"])
		require.Nil(t, rb["judge"])
		require.Len(t, rb["measured"].(map[string]any)["tool_errors"], 1)
		require.Len(t, g["detected_issues"], 2, "the measured tool error and dead air")
		c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)
		require.Equal(t, "completed", c["grade_status"])
		require.Nil(t, c["grade_score"])
		require.Equal(t, float64(2), c["issue_count"])
		require.Equal(t, float64(0), c["critical_issue_count"])
	})
}

func TestWorker(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		j, url := newJudge(t)
		j.set(goodReply, 200)
		a := server(t, db, grading.Config{NoWorker: true})
		o := a.CallOrg("+13105550402")
		policy := func(ctx context.Context, orgID, agentID int64) (bool, string, bool, error) {
			ag, err := a.Store.Agents.Agent(ctx, orgID, agentID)
			if err != nil {
				return false, "", false, err
			}
			var c struct {
				GradingEnabled *bool  `json:"grading_enabled"`
				Prompt         string `json:"prompt"`
			}
			require.NoError(t, json.Unmarshal(ag.Config, &c))
			return c.GradingEnabled == nil || *c.GradingEnabled, c.Prompt, true, nil
		}
		newService := func(cfg grading.Config) *grading.Service {
			cfg.Model = llm.OpenAIConfig{BaseURL: url, Model: "judge-1"}
			s, err := grading.New(cfg, nil, a.Store.Calls, a.Store.Grading, policy)
			require.NoError(t, err)
			return s
		}

		t.Run("a finished call is queued and graded automatically", func(t *testing.T) {
			cid := failedToolCall(t, a, o)
			st, _, _, err := a.Store.Grading.GradeJobStatus(ctx, cid)
			require.NoError(t, err)
			require.Equal(t, "pending", st)
			require.Equal(t, "pending", a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)["grade_status"], "queued shows pending")
			s := newService(grading.Config{Poll: 20 * time.Millisecond})
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error)
			go func() { done <- s.Run(rctx) }()
			require.Eventually(t, func() bool {
				st, _, _, _ := a.Store.Grading.GradeJobStatus(ctx, cid)
				return st == "done"
			}, 10*time.Second, 20*time.Millisecond)
			cancel()
			<-done
			g := a.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Obj(t)
			require.Equal(t, "completed", g["status"])
			require.Equal(t, float64(82), g["score"])
			require.Len(t, events(t, a, o.Org.ID, "call.graded"), 1)
		})

		t.Run("a job left by a dead worker resumes after its lease", func(t *testing.T) {
			cid := failedToolCall(t, a, o)
			job, ok, err := a.Store.Grading.ClaimGradeJob(ctx, "dead-worker", time.Millisecond)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, cid, job.CallID)
			time.Sleep(5 * time.Millisecond)
			s := newService(grading.Config{})
			did, err := s.RunOnce(ctx)
			require.NoError(t, err)
			require.True(t, did)
			st, attempts, _, err := a.Store.Grading.GradeJobStatus(ctx, cid)
			require.NoError(t, err)
			require.Equal(t, "done", st)
			require.Equal(t, int64(2), attempts)
			require.Error(t, a.Store.Grading.EndGradeJob(ctx, job, "", nil), "the dead worker's claim is gone")
			require.Equal(t, 200, a.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Status)
		})

		t.Run("a malformed reply retries with backoff, then fails the grade", func(t *testing.T) {
			j.set("not json", 200)
			cid := failedToolCall(t, a, o)
			s := newService(grading.Config{MaxAttempts: 2, Backoff: 50 * time.Millisecond})
			did, err := s.RunOnce(ctx)
			require.NoError(t, err)
			require.True(t, did)
			st, attempts, msg, err := a.Store.Grading.GradeJobStatus(ctx, cid)
			require.NoError(t, err)
			require.Equal(t, "pending", st)
			require.Equal(t, int64(1), attempts)
			require.Contains(t, msg, "malformed reply")
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Status, "no grade before the last attempt")
			did, err = s.RunOnce(ctx)
			require.NoError(t, err)
			require.False(t, did, "not due before the backoff")
			time.Sleep(60 * time.Millisecond)
			did, err = s.RunOnce(ctx)
			require.NoError(t, err)
			require.True(t, did)
			g := a.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Obj(t)
			require.Equal(t, "failed", g["status"])
			require.Contains(t, g["outcome_reasoning"], "malformed reply")
			st, _, _, _ = a.Store.Grading.GradeJobStatus(ctx, cid)
			require.Equal(t, "done", st)
			j.set(goodReply, 200)
		})

		t.Run("an agent with grading off is skipped", func(t *testing.T) {
			r := a.Do("PATCH", fmt.Sprintf("/v1/agents/%d", o.AgentID), o.OwnerK, map[string]any{"grading_enabled": false})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, false, r.Obj(t)["grading_enabled"])
			cid := failedToolCall(t, a, o)
			n := j.count()
			s := newService(grading.Config{})
			did, err := s.RunOnce(ctx)
			require.NoError(t, err)
			require.True(t, did)
			st, _, msg, _ := a.Store.Grading.GradeJobStatus(ctx, cid)
			require.Equal(t, "done", st)
			require.Contains(t, msg, "grading is off")
			require.Equal(t, n, j.count())
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Status)
			require.Nil(t, a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)["grade_status"], "a skipped call shows no grade status")
			// On demand still grades.
			require.Equal(t, 200, a.Do("POST", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Status)
		})
	})
}

// TestServerWorker: calls queued by one server (whose worker is off, as if
// it died) are graded by the worker of the next server on the same
// database, which reads each agent's grading_enabled.
func TestServerWorker(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		j, url := newJudge(t)
		j.set(goodReply, 200)
		first := server(t, db, grading.Config{NoWorker: true})
		on := first.CallOrg("+13105550410")
		off := first.CallOrg("+13105550411")
		r := first.Do("PATCH", fmt.Sprintf("/v1/agents/%d", off.AgentID), off.OwnerK, map[string]any{"grading_enabled": false})
		require.Equal(t, 200, r.Status, string(r.Body))
		graded := failedToolCall(t, first, on)
		skipped := failedToolCall(t, first, off)

		next := server(t, db, grading.Config{Model: llm.OpenAIConfig{BaseURL: url, Model: "judge-1"}, Poll: 20 * time.Millisecond})
		require.Eventually(t, func() bool {
			return next.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", graded), on.MembK, nil).Status == 200
		}, 10*time.Second, 20*time.Millisecond)
		g := next.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", graded), on.MembK, nil).Obj(t)
		require.Equal(t, float64(82), g["score"])
		require.Contains(t, j.requests[0], "Answer for Acme Dental.", "the judge got the agent's prompt")
		require.Eventually(t, func() bool {
			st, _, _, _ := next.Store.Grading.GradeJobStatus(context.Background(), skipped)
			return st == "done"
		}, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, 404, next.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", skipped), off.MembK, nil).Status)
		require.Len(t, events(t, next, on.Org.ID, "call.graded"), 1)
		require.Len(t, events(t, next, off.Org.ID, "call.graded"), 0)
		require.Len(t, events(t, next, on.Org.ID, "issue.reported"), 3)
	})
}
