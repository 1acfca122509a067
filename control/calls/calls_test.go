package calls_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/calltest"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// callKeys are the fields of the call object, spec section 2.9.
var callKeys = []string{"call_id", "agent_id", "agent_variant_id", "agent_variant_label", "direction", "from_number", "to_number",
	"start_time", "end_time", "duration_seconds", "status", "end_reason", "recording_url", "recording_started_at", "is_simulation",
	"is_test_call", "is_scenario_call", "prompt_snapshot", "tool_snapshot", "worker_execution_name", "media_room_name",
	"media_room_sid", "product", "voice", "billable_minutes", "billing_total_cents", "billed_at", "grade_score", "grade_status",
	"grade_updated_at", "call_outcome", "issue_count", "critical_issue_count", "quality"}

func TestCalls(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		log := a.Srv.CallLog()
		ctx := context.Background()

		t.Run("a realistic call: detail, transcript, history", func(t *testing.T) {
			o := a.CallOrg("+13105550300")
			start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
			cid := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number, Start: start, Turns: calltest.Conversation(),
				Tools: []calltest.ToolUse{{Name: "reschedule", Arguments: `{"day":"Thursday"}`, Output: "moved", At: 13 * time.Second}},
				DTMF:  "1#", RecordAfter: 2 * time.Second, Outcome: "success"})
			// Later prompt changes do not rewrite the call's snapshot.
			require.Equal(t, 200, a.Do("PATCH", fmt.Sprintf("/v1/agents/%d", o.AgentID), o.OwnerK, map[string]any{"prompt": "New prompt."}).Status)

			r := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			c := r.Obj(t)
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			require.ElementsMatch(t, callKeys, keys)
			require.Equal(t, float64(cid), c["call_id"])
			require.Equal(t, float64(o.AgentID), c["agent_id"])
			require.Equal(t, "inbound", c["direction"])
			require.Equal(t, "+15550001111", c["from_number"])
			require.Equal(t, o.Number, c["to_number"])
			require.Equal(t, "completed", c["status"])
			require.Equal(t, "caller_hangup", c["end_reason"])
			require.Equal(t, "success", c["call_outcome"])
			require.Equal(t, float64(15), c["duration_seconds"])
			require.Equal(t, start.UTC().Format("2006-01-02T15:04:05.000Z"), c["start_time"])
			require.Equal(t, start.Add(2*time.Second).UTC().Format("2006-01-02T15:04:05.000Z"), c["recording_started_at"])
			require.Equal(t, fmt.Sprintf("blob://recordings/%d/%d.wav", o.Org.ID, cid), c["recording_url"])
			require.Equal(t, "Answer for Acme Dental.", c["prompt_snapshot"])
			require.Equal(t, "reschedule", c["tool_snapshot"].([]any)[0].(map[string]any)["name"])
			require.Equal(t, "storm-base", c["product"])
			require.Equal(t, "espeak:en-us", c["voice"])
			require.Equal(t, false, c["is_simulation"])
			require.Equal(t, c["is_simulation"], c["is_test_call"])
			// Billed at the end: 15 s is a quarter minute of storm-base (9 c/min), rounded up.
			require.Equal(t, 0.25, c["billable_minutes"])
			require.Equal(t, float64(3), c["billing_total_cents"])
			require.NotNil(t, c["billed_at"])
			require.Equal(t, float64(0), c["issue_count"])
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), a.World().OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("GET", "/v1/calls/999999999", o.OwnerK, nil).Status)

			r = a.Do("GET", fmt.Sprintf("/v1/calls/%d/transcript", cid), o.MembK, nil)
			require.Equal(t, 200, r.Status)
			var tr struct {
				CallID             int64  `json:"call_id"`
				RecordingStartedAt string `json:"recording_started_at"`
				Turns              []struct {
					Role        string `json:"role"`
					Text        string `json:"text"`
					StartMS     int64  `json:"start_ms"`
					EndMS       int64  `json:"end_ms"`
					Interrupted bool   `json:"interrupted"`
				} `json:"turns"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &tr))
			require.Len(t, tr.Turns, 4)
			require.Equal(t, c["recording_started_at"], tr.RecordingStartedAt)
			// Anchored to the recording, which started 2 s into the call.
			require.Equal(t, "assistant", tr.Turns[0].Role)
			require.Equal(t, int64(0), tr.Turns[0].StartMS, "before the recording clamps to 0")
			require.Equal(t, int64(1000), tr.Turns[0].EndMS)
			require.Equal(t, int64(2000), tr.Turns[1].StartMS)
			require.Equal(t, int64(6000), tr.Turns[1].EndMS)
			require.True(t, tr.Turns[2].Interrupted)
			require.Equal(t, "Sure. Which day works better,\nWednesday or Thursday?", tr.Turns[2].Text)

			r = a.Do("GET", fmt.Sprintf("/v1/calls/%d/history", cid), o.MembK, nil)
			require.Equal(t, 200, r.Status)
			items := r.Obj(t)["items"].([]any)
			var types []string
			for _, it := range items {
				types = append(types, it.(map[string]any)["type"].(string))
			}
			require.Equal(t, []string{"recording_started", "message", "message", "message", "message", "tool_call", "tool_result", "dtmf"}, types)
			call := items[5].(map[string]any)
			require.Equal(t, "reschedule", call["name"])
			require.Equal(t, map[string]any{"day": "Thursday"}, call["arguments"])
			require.Equal(t, call["tool_call_id"], items[6].(map[string]any)["tool_call_id"])
			require.Equal(t, "moved", items[6].(map[string]any)["output"])
			require.Equal(t, "1#", items[7].(map[string]any)["digits"])
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/calls/%d/history", cid), a.World().OwnerK, nil).Status)

			// Redelivered events and a second finish change nothing.
			require.NoError(t, log.Append(ctx, cid, []calllog.CallEvent{{ID: fmt.Sprintf("ev-%d-2", cid), Kind: calllog.EventTurn, Role: "user", Text: "dup"}}))
			require.NoError(t, log.Finish(ctx, cid, calllog.CallEnd{Status: "failed", Reason: "timeout"}))
			r = a.Do("GET", fmt.Sprintf("/v1/calls/%d/transcript", cid), o.MembK, nil)
			require.NoError(t, json.Unmarshal(r.Body, &tr))
			require.Len(t, tr.Turns, 4)
			require.Equal(t, "completed", a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)["status"])
		})

		t.Run("malformed events are refused", func(t *testing.T) {
			o := a.CallOrg("+13105550301")
			cid := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number, InProgress: true})
			for _, e := range []calllog.CallEvent{{Kind: "gossip"}, {Kind: calllog.EventTurn, Role: "narrator"},
				{Kind: calllog.EventTurn, Role: "user", Start: time.Now(), End: time.Now().Add(-time.Second)},
				{Kind: calllog.EventToolCall}, {Kind: calllog.EventToolCall, ToolName: "x", Arguments: json.RawMessage("{")}, {Kind: calllog.EventDTMF, Digits: "12x"}} {
				require.ErrorIs(t, log.Append(ctx, cid, []calllog.CallEvent{e}), calllog.ErrBadEvent, "%+v", e)
			}
			for _, end := range []calllog.CallEnd{{Status: "done"}, {Status: "completed", Outcome: "great"}, {Status: "completed", RecordingKey: "../etc/passwd"}, {Status: "completed", RecordingKey: "/abs.wav"}} {
				require.ErrorIs(t, log.Finish(ctx, cid, end), calllog.ErrBadEvent, "%+v", end)
			}
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)
			require.Equal(t, "in_progress", c["status"])
			require.Nil(t, c["end_time"])
			require.Nil(t, c["duration_seconds"])
		})

		t.Run("admission refusals keep the cause", func(t *testing.T) {
			o := a.CallOrg("+13105550302")
			_, err := log.Admit(ctx, calllog.AdmitRequest{Direction: "inbound", To: "+19995550000", From: "+15550001111"})
			require.ErrorIs(t, err, calllog.ErrUnknownNumber)
			_, err = log.Admit(ctx, calllog.AdmitRequest{Direction: "outbound", OrgID: o.Org.ID, AgentID: o.AgentID})
			require.ErrorIs(t, err, calllog.ErrBadEvent)
			_, err = log.Admit(ctx, calllog.AdmitRequest{Direction: "test", OrgID: o.Org.ID, AgentID: 999999999})
			require.ErrorIs(t, err, calllog.ErrUnknownAgent)

			np := fmt.Sprintf("/v1/phone-numbers/%d", o.NumID)
			require.Equal(t, 200, a.Do("PATCH", np, o.OwnerK, map[string]any{"inbound_agent_id": nil}).Status)
			adm, err := log.Admit(ctx, calllog.AdmitRequest{Direction: "inbound", To: o.Number, From: "+15550002222"})
			require.ErrorIs(t, err, calllog.ErrNoAgent)
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", adm.CallID), o.MembK, nil).Obj(t)
			require.Equal(t, "failed", c["status"])
			require.Equal(t, "no_agent", c["end_reason"])

			require.Equal(t, 200, a.Do("PATCH", np, o.OwnerK, map[string]any{"status": "released"}).Status)
			adm, err = log.Admit(ctx, calllog.AdmitRequest{Direction: "inbound", To: o.Number})
			require.ErrorIs(t, err, calllog.ErrNumberInactive)
			require.Equal(t, "number_inactive", a.Do("GET", fmt.Sprintf("/v1/calls/%d", adm.CallID), o.MembK, nil).Obj(t)["end_reason"])

			require.Equal(t, 200, a.Do("PATCH", np, o.OwnerK, map[string]any{"status": "active", "inbound_agent_id": o.AgentID}).Status)
			bal, err := a.Store.Billing.Balance(ctx, o.Org.ID)
			require.NoError(t, err)
			_, err = a.Store.Billing.Post(ctx, o.Org.ID, storage.TxAdjustment, -bal, "drain", "")
			require.NoError(t, err)
			adm, err = log.Admit(ctx, calllog.AdmitRequest{Direction: "inbound", To: o.Number})
			require.ErrorIs(t, err, calllog.ErrInsufficientBalance)
			require.Equal(t, "insufficient_balance", a.Do("GET", fmt.Sprintf("/v1/calls/%d", adm.CallID), o.MembK, nil).Obj(t)["end_reason"])
			_, err = log.Admit(ctx, calllog.AdmitRequest{Direction: "web", OrgID: o.Org.ID, AgentID: o.AgentID})
			require.ErrorIs(t, err, calllog.ErrInsufficientBalance)

			a.Credit(o.Org.ID, 100)
			adm, err = log.Admit(ctx, calllog.AdmitRequest{Direction: "inbound", To: o.Number, From: "+15550003333"})
			require.NoError(t, err)
			require.Equal(t, o.AgentID, adm.AgentID)
			require.Equal(t, "Answer for Acme Dental.", adm.Agent.Prompt, "the deployed configuration")
			require.Equal(t, "in_progress", a.Do("GET", fmt.Sprintf("/v1/calls/%d", adm.CallID), o.MembK, nil).Obj(t)["status"])
		})

		t.Run("list: envelope, order, filters, paging", func(t *testing.T) {
			o := a.CallOrg("+13105550303")
			base := time.Now().Add(-time.Hour).Truncate(time.Second)
			mk := func(spec calltest.Spec) int64 {
				spec.OrgID, spec.AgentID = o.Org.ID, o.AgentID
				if spec.Direction == "" {
					spec.To = o.Number
				}
				return calltest.Make(t, log, a.BlobDir, spec)
			}
			c1 := mk(calltest.Spec{Start: base, Length: 30 * time.Second})
			c2 := mk(calltest.Spec{Start: base.Add(10 * time.Minute), From: "+15557770000", Status: "failed", Reason: "timeout"})
			c3 := mk(calltest.Spec{Start: base.Add(20 * time.Minute), Direction: "test", IsSimulation: true})
			c4 := mk(calltest.Spec{Start: base.Add(20 * time.Minute), Direction: "web"}) // same start as c3: id breaks the tie
			c5 := mk(calltest.Spec{Start: base.Add(30 * time.Minute), InProgress: true})
			ids := func(q string) []int64 {
				t.Helper()
				r := a.Do("GET", "/v1/calls"+q, o.MembK, nil)
				require.Equal(t, 200, r.Status, "%s: %s", q, r.Body)
				var out []int64
				for _, c := range r.Obj(t)["results"].([]any) {
					out = append(out, controltest.ID(c.(map[string]any)))
				}
				return out
			}
			r := a.Do("GET", "/v1/calls", o.MembK, nil)
			env := r.Obj(t)
			require.Equal(t, float64(5), env["total"])
			require.Equal(t, float64(50), env["limit"])
			require.Equal(t, float64(0), env["offset"])
			require.Equal(t, []int64{c5, c4, c3, c2, c1}, ids(""))
			require.Equal(t, []int64{c4, c3}, ids("?limit=2&offset=1"))
			r = a.Do("GET", "/v1/calls?limit=2&offset=1", o.MembK, nil)
			require.Equal(t, float64(5), r.Obj(t)["total"], "total ignores paging")
			require.Equal(t, []int64{c2}, ids("?status=failed"))
			require.Equal(t, []int64{c5}, ids("?status=in_progress"))
			require.Equal(t, []int64{c3}, ids("?direction=test"))
			require.Equal(t, []int64{c3}, ids("?is_simulation=true"))
			require.Equal(t, []int64{c5, c4, c2, c1}, ids("?is_simulation=false"))
			require.Equal(t, []int64{c5, c4, c3, c2, c1}, ids(fmt.Sprintf("?agent_id=%d", o.AgentID)))
			require.Empty(t, ids("?agent_id=999999999"))
			require.Equal(t, []int64{c2}, ids("?number=%2B15557770000"))
			require.Equal(t, []int64{c2}, ids("?number=+15557770000"), "an unescaped + decodes to a space")
			require.Equal(t, []int64{c5, c2, c1}, ids("?number="+url.QueryEscape(o.Number)))
			after := url.QueryEscape(base.Add(10 * time.Minute).UTC().Format(time.RFC3339))
			before := url.QueryEscape(base.Add(30 * time.Minute).UTC().Format(time.RFC3339))
			require.Equal(t, []int64{c4, c3, c2}, ids("?started_after="+after+"&started_before="+before))
			require.Empty(t, ids("?status=failed&direction=web"))
			for _, q := range []string{"?status=lost", "?direction=sideways", "?agent_id=x", "?number=555", "?started_after=yesterday", "?is_simulation=maybe", "?limit=0", "?limit=501", "?offset=-1"} {
				require.Equal(t, 400, a.Do("GET", "/v1/calls"+q, o.MembK, nil).Status, q)
			}
			require.Equal(t, float64(0), a.Do("GET", "/v1/calls", a.World().MembK, nil).Obj(t)["total"])
		})

		t.Run("export: CSV with commas, quotes and newlines, and JSON", func(t *testing.T) {
			o := a.CallOrg("+13105550304")
			cid := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number, Turns: calltest.Conversation(), Record: true})
			other := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number, Turns: []calltest.Turn{{Role: "user", Text: "a,b", Length: time.Second}}})
			r := a.Do("GET", "/v1/calls/export", o.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
			require.Contains(t, r.Header.Get("Content-Disposition"), "attachment")
			require.Equal(t, "2", r.Header.Get("X-Total-Count"))
			rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
			require.NoError(t, err)
			require.Len(t, rows, 3)
			hdr := rows[0]
			col := func(name string) int { return slices.Index(hdr, name) }
			require.Equal(t, "call_id", hdr[0])
			require.Equal(t, "transcript", hdr[len(hdr)-1])
			require.Equal(t, strconv.FormatInt(other, 10), rows[1][0], "newest first")
			require.Equal(t, strconv.FormatInt(cid, 10), rows[2][0])
			want := "assistant: Hi, thanks for calling Acme Dental. How can I help?\n" +
				"user: Hello, I'd like to move my appointment, the one on \"Tuesday\".\n" +
				"assistant: Sure. Which day works better,\nWednesday or Thursday?\n" +
				"user: Thursday, please."
			require.Equal(t, want, rows[2][col("transcript")])
			require.Equal(t, "user: a,b", rows[1][col("transcript")])
			require.Equal(t, "completed", rows[2][col("status")])
			require.Equal(t, "inbound", rows[2][col("direction")])

			r = a.Do("GET", "/v1/calls/export?format=json&limit=1", o.MembK, nil)
			require.Equal(t, 200, r.Status)
			l := r.List(t)
			require.Len(t, l, 1)
			require.Equal(t, float64(other), l[0]["call_id"])
			require.Equal(t, "a,b", l[0]["transcript"].([]any)[0].(map[string]any)["text"])
			r = a.Do("GET", "/v1/calls/export?format=json&offset=1", o.MembK, nil)
			require.Len(t, r.List(t)[0]["transcript"], 4)
			require.Equal(t, 200, a.Do("GET", "/v1/calls/export?limit=1000", o.MembK, nil).Status)
			require.Equal(t, 400, a.Do("GET", "/v1/calls/export?limit=1001", o.MembK, nil).Status)
			require.Equal(t, 400, a.Do("GET", "/v1/calls/export?format=xml", o.MembK, nil).Status)
			r = a.Do("GET", "/v1/calls/export", a.World().MembK, nil)
			rows, err = csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
			require.NoError(t, err)
			require.Len(t, rows, 1, "another org exports only a header")
		})

		t.Run("grade", func(t *testing.T) {
			o := a.CallOrg("+13105550305")
			cid := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number, Turns: calltest.Conversation()})
			gp := fmt.Sprintf("/v1/calls/%d/grade", cid)
			r := a.Do("GET", gp, o.MembK, nil)
			require.Equal(t, 404, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "not been graded")
			score, outcome := int64(87), "success"
			graded := time.Now().Truncate(time.Millisecond)
			_, err := a.Store.Calls.AddCallGrade(ctx, storage.CallGrade{CallID: cid, Status: "completed", Score: &score, CallOutcome: &outcome,
				Summary: "Rescheduled to Thursday.", RubricBreakdown: json.RawMessage(`{"politeness":9}`), DetectedIssues: json.RawMessage(`[]`),
				GraderModel: "echo", GraderVersion: "1", GradedAt: &graded})
			require.NoError(t, err)
			r = a.Do("GET", gp, o.MembK, nil)
			require.Equal(t, 200, r.Status)
			g := r.Obj(t)
			require.Equal(t, float64(87), g["score"])
			require.Equal(t, "completed", g["status"])
			require.Equal(t, map[string]any{"politeness": float64(9)}, g["rubric_breakdown"])
			require.Equal(t, []any{}, g["detected_issues"])
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)
			require.Equal(t, float64(87), c["grade_score"])
			require.Equal(t, "completed", c["grade_status"])
			require.Equal(t, "success", c["call_outcome"])
			require.NotNil(t, c["grade_updated_at"])
			require.Equal(t, 404, a.Do("GET", gp, a.World().OwnerK, nil).Status)
		})

		t.Run("signed audio URLs expire and reject tampering", func(t *testing.T) {
			o := a.CallOrg("+13105550306")
			cid := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number, Turns: calltest.Conversation(), Record: true})
			silent := calltest.Make(t, log, a.BlobDir, calltest.Spec{To: o.Number})
			r := a.Do("GET", fmt.Sprintf("/v1/calls/%d/audio", silent), o.MembK, nil)
			require.Equal(t, 404, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "no recording")
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/calls/%d/audio", cid), a.World().MembK, nil).Status)

			before := time.Now()
			r = a.Do("GET", fmt.Sprintf("/v1/calls/%d/audio", cid), o.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			au := r.Obj(t)
			require.Equal(t, "audio/wav", au["content_type"])
			exp, err := time.Parse(time.RFC3339, au["expires_at"].(string))
			require.NoError(t, err)
			require.WithinDuration(t, before.Add(time.Hour), exp, 5*time.Second)
			u, err := url.Parse(au["url"].(string))
			require.NoError(t, err)
			require.Equal(t, "voice.example", u.Host)
			path := u.Path + "?" + u.RawQuery

			want, err := os.ReadFile(filepath.Join(a.BlobDir, "recordings", fmt.Sprint(o.Org.ID), fmt.Sprintf("%d.wav", cid)))
			require.NoError(t, err)
			r = a.Do("GET", path, "", nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "audio/wav", r.Header.Get("Content-Type"))
			require.Equal(t, want, r.Body)
			require.Equal(t, "RIFF", string(r.Body[:4]))

			q := u.Query()
			sig, expires := q.Get("sig"), q.Get("expires")
			flip := func(s string) string {
				b := []byte(s)
				if b[0] == 'a' {
					b[0] = 'b'
				} else {
					b[0] = 'a'
				}
				return string(b)
			}
			sign := func(callID, exp int64) string {
				m := hmac.New(sha256.New, controltest.SigningKey)
				fmt.Fprintf(m, "recording\n%d\n%d", callID, exp)
				return hex.EncodeToString(m.Sum(nil))
			}
			expUnix, _ := strconv.ParseInt(expires, 10, 64)
			past := time.Now().Add(-time.Second).Unix()
			for name, p := range map[string]string{
				"tampered signature":        fmt.Sprintf("/v1/calls/%d/recording?expires=%s&sig=%s", cid, expires, flip(sig)),
				"extended expiry":           fmt.Sprintf("/v1/calls/%d/recording?expires=%d&sig=%s", cid, expUnix+3600, sig),
				"another call":              fmt.Sprintf("/v1/calls/%d/recording?expires=%s&sig=%s", silent, expires, sig),
				"no signature":              fmt.Sprintf("/v1/calls/%d/recording?expires=%s", cid, expires),
				"no expiry":                 fmt.Sprintf("/v1/calls/%d/recording?sig=%s", cid, sig),
				"expired, validly signed":   fmt.Sprintf("/v1/calls/%d/recording?expires=%d&sig=%s", cid, past, sign(cid, past)),
				"signed with the wrong key": fmt.Sprintf("/v1/calls/%d/recording?expires=%s&sig=%s", cid, expires, hex.EncodeToString(make([]byte, 32))),
				"not a call id":             fmt.Sprintf("/v1/calls/abc/recording?expires=%s&sig=%s", expires, sig),
			} {
				r := a.Do("GET", p, "", nil)
				require.Equal(t, 401, r.Status, name)
				require.Contains(t, r.Obj(t)["detail"], "expired", name)
			}
			// The test's own signer agrees with the server: the format is as documented.
			future := time.Now().Add(time.Minute).Unix()
			r = a.Do("GET", fmt.Sprintf("/v1/calls/%d/recording?expires=%d&sig=%s", cid, future, sign(cid, future)), "", nil)
			require.Equal(t, 200, r.Status)
			// A validly signed URL of a call without a recording is 404.
			r = a.Do("GET", fmt.Sprintf("/v1/calls/%d/recording?expires=%d&sig=%s", silent, future, sign(silent, future)), "", nil)
			require.Equal(t, 404, r.Status)
		})
	})
}
