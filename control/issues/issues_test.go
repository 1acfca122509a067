package issues_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/calltest"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

var issueKeys = []string{"id", "trace_id", "call_id", "agent_id", "source", "severity", "status", "title", "description", "what_went_wrong",
	"suggested_fix", "timestamp_seconds", "failing_turn_index", "detected_issue_ref", "metadata", "reported_by_id", "linked_test_cases",
	"regression_guarded", "created_at", "updated_at"}

func TestIssueReports(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		o := a.CallOrg("+13105550500")
		mk := func() int64 {
			return calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{To: o.Number, Turns: calltest.Conversation()})
		}
		cid := mk()
		path := fmt.Sprintf("/v1/calls/%d/issue-reports", cid)
		file := func(auth string, body map[string]any) map[string]any {
			t.Helper()
			r := a.Do("POST", path, auth, body)
			require.Equal(t, 201, r.Status, string(r.Body))
			return r.Obj(t)
		}

		t.Run("file: fields and defaults", func(t *testing.T) {
			r := file(o.MembK, map[string]any{"title": "Agent misheard the date"})
			keys := make([]string, 0, len(r))
			for k := range r {
				keys = append(keys, k)
			}
			require.ElementsMatch(t, issueKeys, keys)
			require.Equal(t, float64(cid), r["call_id"])
			require.Equal(t, float64(o.AgentID), r["agent_id"])
			require.Equal(t, "user", r["source"])
			require.Equal(t, "warning", r["severity"], "default severity")
			require.Equal(t, "open", r["status"])
			require.Equal(t, "", r["description"])
			require.Equal(t, "", r["what_went_wrong"])
			require.Nil(t, r["timestamp_seconds"])
			require.Nil(t, r["failing_turn_index"])
			require.Nil(t, r["detected_issue_ref"])
			require.Equal(t, map[string]any{}, r["metadata"])
			require.Equal(t, float64(o.Member.ID), r["reported_by_id"])
			require.Equal(t, []any{}, r["linked_test_cases"])
			require.Equal(t, false, r["regression_guarded"])
			require.Len(t, r["trace_id"], 36)

			r = file(o.OwnerK, map[string]any{"title": strings.Repeat("é", 255), "severity": "critical", "description": "Said Tuesday.",
				"timestamp_seconds": 12, "failing_turn_index": 2, "metadata": map[string]any{"ticket": "T-1"}})
			require.Equal(t, "critical", r["severity"])
			require.Equal(t, float64(12), r["timestamp_seconds"])
			require.Equal(t, float64(2), r["failing_turn_index"])
			require.Equal(t, map[string]any{"ticket": "T-1"}, r["metadata"])
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), o.MembK, nil).Obj(t)
			require.Equal(t, float64(2), c["issue_count"])
			require.Equal(t, float64(1), c["critical_issue_count"])

			rows, err := a.Store.DB().QueryContext(context.Background(), `SELECT data FROM webhook_events WHERE org_id = $1 AND type = 'issue.reported'`, o.Org.ID)
			require.NoError(t, err)
			n := 0
			for rows.Next() {
				var s string
				require.NoError(t, rows.Scan(&s))
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(s), &m))
				require.Equal(t, float64(cid), m["call_id"])
				n++
			}
			rows.Close()
			require.Equal(t, 2, n, "issue.reported once per report")
		})

		t.Run("file: validation and 404", func(t *testing.T) {
			for _, tc := range []struct {
				body  any
				field string
			}{
				{map[string]any{}, "title"},
				{map[string]any{"title": "  "}, "title"},
				{map[string]any{"title": strings.Repeat("x", 256)}, "title"},
				{map[string]any{"title": "x", "severity": "fatal"}, "severity"},
				{map[string]any{"title": "x", "timestamp_seconds": -1}, "timestamp_seconds"},
				{map[string]any{"title": "x", "failing_turn_index": -2}, "failing_turn_index"},
				{map[string]any{"title": "x", "metadata": []any{1}}, "metadata"},
				{map[string]any{"title": 5}, "title"},
			} {
				r := a.Do("POST", path, o.MembK, tc.body)
				require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
				require.Contains(t, r.Obj(t), tc.field)
			}
			require.Equal(t, 400, a.Do("POST", path, o.MembK, "[]").Status)
			require.Equal(t, 404, a.Do("POST", path, a.World().OwnerK, map[string]any{"title": "x"}).Status)
			require.Equal(t, 404, a.Do("GET", path, a.World().OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("POST", "/v1/calls/99999/issue-reports", o.MembK, map[string]any{"title": "x"}).Status)
			require.Equal(t, 401, a.Do("GET", path, "", nil).Status)
		})

		t.Run("call list: severity order", func(t *testing.T) {
			l := a.Do("GET", path, o.MembK, nil).List(t)
			require.Len(t, l, 2)
			require.Equal(t, "critical", l[0]["severity"])
			require.Equal(t, "warning", l[1]["severity"])
		})

		t.Run("list: envelope, filters, ordering, paging", func(t *testing.T) {
			other := mk()
			op := fmt.Sprintf("/v1/calls/%d/issue-reports", other)
			for _, sev := range []string{"info", "critical", "warning", "info"} {
				r := a.Do("POST", op, o.MembK, map[string]any{"title": "t " + sev, "severity": sev})
				require.Equal(t, 201, r.Status)
				time.Sleep(2 * time.Millisecond)
			}
			r := a.Do("GET", "/v1/issue-reports", o.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			env := r.Obj(t)
			require.Equal(t, float64(6), env["total"])
			require.Equal(t, float64(100), env["limit"])
			require.Equal(t, float64(0), env["offset"])
			res := env["results"].([]any)
			var sevs []string
			for _, x := range res {
				sevs = append(sevs, x.(map[string]any)["severity"].(string))
			}
			require.Equal(t, []string{"critical", "critical", "warning", "warning", "info", "info"}, sevs)
			// Newest first within a severity.
			require.Equal(t, float64(other), res[0].(map[string]any)["call_id"])
			i0, i1 := res[4].(map[string]any), res[5].(map[string]any)
			require.Greater(t, i0["id"], i1["id"])

			get := func(q string) map[string]any {
				t.Helper()
				r := a.Do("GET", "/v1/issue-reports?"+q, o.MembK, nil)
				require.Equal(t, 200, r.Status, "%s: %s", q, r.Body)
				return r.Obj(t)
			}
			require.Equal(t, float64(2), get("severity=info")["total"])
			require.Equal(t, float64(4), get(fmt.Sprintf("call_id=%d", other))["total"])
			require.Equal(t, float64(6), get(fmt.Sprintf("agent_id=%d", o.AgentID))["total"])
			require.Equal(t, float64(0), get("agent_id=999999")["total"])
			require.Equal(t, float64(6), get("status=open")["total"])
			require.Equal(t, float64(0), get("status=resolved")["total"])
			now := time.Now().UTC()
			require.Equal(t, float64(6), get("start_date=" + now.Format("2006-01-02"))["total"])
			require.Equal(t, float64(6), get("end_date=" + now.Format("2006-01-02"))["total"], "a date end_date includes that day")
			require.Equal(t, float64(0), get("start_date=" + url.QueryEscape(now.Add(time.Hour).Format(time.RFC3339)))["total"])
			require.Equal(t, float64(0), get("end_date=" + now.AddDate(0, 0, -1).Format("2006-01-02"))["total"])
			p := get("limit=2&offset=1")
			require.Equal(t, float64(6), p["total"])
			require.Equal(t, float64(2), p["limit"])
			require.Len(t, p["results"], 2)
			require.Equal(t, res[1].(map[string]any)["id"], p["results"].([]any)[0].(map[string]any)["id"])
			require.Equal(t, float64(500), get("limit=501")["limit"], "limit is capped at 500")
			require.Len(t, get("offset=10")["results"], 0)
			for _, q := range []string{"limit=0", "limit=x", "offset=-1", "severity=bad", "status=closed", "call_id=x", "agent_id=1.5", "start_date=yesterday", "end_date=2026-13-01"} {
				r := a.Do("GET", "/v1/issue-reports?"+q, o.MembK, nil)
				require.Equal(t, 400, r.Status, q)
				field, _, _ := strings.Cut(q, "=")
				require.Contains(t, r.Obj(t), field, q)
			}
			env = a.Do("GET", "/v1/issue-reports", a.World().OwnerK, nil).Obj(t)
			require.Equal(t, float64(0), env["total"], "another org sees none")
			require.Equal(t, []any{}, env["results"])
		})

		t.Run("patch one: any transition", func(t *testing.T) {
			l := a.Do("GET", path, o.MembK, nil).List(t)
			tid := l[0]["trace_id"].(string)
			for _, st := range []string{"resolved", "open", "acknowledged", "resolved"} {
				r := a.Do("PATCH", "/v1/issue-reports/"+tid, o.MembK, map[string]any{"status": st})
				require.Equal(t, 200, r.Status, string(r.Body))
				require.Equal(t, st, r.Obj(t)["status"])
			}
			require.Equal(t, 400, a.Do("PATCH", "/v1/issue-reports/"+tid, o.MembK, map[string]any{"status": "closed"}).Status)
			require.Equal(t, 400, a.Do("PATCH", "/v1/issue-reports/"+tid, o.MembK, map[string]any{}).Status)
			require.Equal(t, 404, a.Do("PATCH", "/v1/issue-reports/"+tid, a.World().OwnerK, map[string]any{"status": "open"}).Status)
			require.Equal(t, 404, a.Do("PATCH", "/v1/issue-reports/"+storage.NewUUID(), o.MembK, map[string]any{"status": "open"}).Status)
			env := a.Do("GET", "/v1/issue-reports?status=resolved", o.MembK, nil).Obj(t)
			require.Equal(t, float64(1), env["total"])
		})

		t.Run("bulk patch", func(t *testing.T) {
			env := a.Do("GET", "/v1/issue-reports", o.MembK, nil).Obj(t)
			var ids []string
			for _, x := range env["results"].([]any) {
				ids = append(ids, x.(map[string]any)["trace_id"].(string))
			}
			foreign := file(o.MembK, map[string]any{"title": "x"})["trace_id"].(string)
			w := a.World()
			r := a.Do("PATCH", "/v1/issue-reports", w.OwnerK, map[string]any{"trace_ids": []string{foreign}, "status": "resolved"})
			require.Equal(t, 200, r.Status)
			require.Equal(t, float64(0), r.Obj(t)["updated"], "another org's ids are skipped")
			body := map[string]any{"trace_ids": append(ids[:3], storage.NewUUID(), ids[0]), "status": "acknowledged"}
			r = a.Do("PATCH", "/v1/issue-reports", o.MembK, body)
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, map[string]any{"updated": float64(3)}, r.Obj(t))
			require.Equal(t, float64(3), a.Do("GET", "/v1/issue-reports?status=acknowledged", o.MembK, nil).Obj(t)["total"])
			many := make([]string, 501)
			for i := range many {
				many[i] = storage.NewUUID()
			}
			for _, b := range []map[string]any{
				{"trace_ids": []string{}, "status": "open"},
				{"status": "open"},
				{"trace_ids": many, "status": "open"},
				{"trace_ids": []string{"not-a-uuid"}, "status": "open"},
				{"trace_ids": []string{ids[0]}},
				{"trace_ids": []string{ids[0]}, "status": "done"},
			} {
				r := a.Do("PATCH", "/v1/issue-reports", o.MembK, b)
				require.Equal(t, 400, r.Status, "%v", b)
			}
			r = a.Do("PATCH", "/v1/issue-reports", o.MembK, map[string]any{"trace_ids": many[:500], "status": "open"})
			require.Equal(t, 200, r.Status)
			require.Equal(t, float64(0), r.Obj(t)["updated"])
		})
	})
}
