package calllog_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestToolEvent: a tool run on a phone call emits telephony.tool; the
// delivery worker posts it, signed, to an endpoint subscribed to it and
// not to one subscribed to something else; a failed run carries its
// error; web calls emit web.tool.
func TestToolEvent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		log := a.Srv.CallLog()
		ctx := context.Background()
		o := a.CallOrg("+13105550310")

		var mu sync.Mutex
		got := map[string][]map[string]any{}
		var raws [][]byte
		var sigs []string
		hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var env map[string]any
			_ = json.Unmarshal(b, &env)
			mu.Lock()
			got[r.URL.Path] = append(got[r.URL.Path], env)
			if r.URL.Path == "/tool" {
				raws, sigs = append(raws, b), append(sigs, r.Header.Get("X-Service-Signature"))
			}
			mu.Unlock()
		}))
		defer hook.Close()
		const base = "/v1/developer/webhook-endpoints"
		r := a.Do("POST", base, o.AdminK, map[string]any{"label": "tools", "url": hook.URL + "/tool", "events": []string{"telephony.tool"}})
		require.Equal(t, 201, r.Status, string(r.Body))
		secret := r.Obj(t)["secret"].(string)
		r = a.Do("POST", base, o.AdminK, map[string]any{"label": "graded", "url": hook.URL + "/other", "events": []string{"call.graded"}})
		require.Equal(t, 201, r.Status, string(r.Body))

		adm, err := log.Admit(ctx, calllog.AdmitRequest{Direction: "inbound", To: o.Number, From: "+15550004444"})
		require.NoError(t, err)
		start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		require.NoError(t, log.ToolEvent(ctx, adm.CallID, calllog.ToolRun{ToolCallID: "call_1", Name: "reschedule",
			Arguments: json.RawMessage(`{"day":"Thursday"}`), Output: `{"moved":true}`, Start: start, End: start.Add(1500 * time.Millisecond)}))
		require.NoError(t, log.ToolEvent(ctx, adm.CallID, calllog.ToolRun{ToolCallID: "call_2", Name: "transfer_call",
			Arguments: json.RawMessage(`not json`), Error: "the transfer did not go through", Start: start, End: start}))
		require.ErrorIs(t, log.ToolEvent(ctx, adm.CallID, calllog.ToolRun{Name: "", Start: start, End: start}), calllog.ErrBadEvent)

		w, err := webhook.New(webhook.Config{AllowLoopback: true}, nil, a.Store.Outbox)
		require.NoError(t, err)
		n, err := w.DeliverDue(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 2)

		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, got["/other"], "not subscribed to telephony.tool")
		tools := got["/tool"]
		require.Len(t, tools, 2, "one event per tool run; the incoming event is not subscribed")
		require.Equal(t, "telephony.tool", tools[0]["type"])
		require.NotEmpty(t, tools[0]["event_id"])
		require.Equal(t, webhook.Sign(secret, raws[0]), sigs[0])
		byName := map[string]map[string]any{}
		for _, e := range tools {
			d := e["data"].(map[string]any)
			byName[d["name"].(string)] = d
		}
		d := byName["reschedule"]
		require.Equal(t, float64(adm.CallID), d["call_id"])
		require.Equal(t, float64(o.AgentID), d["agent_id"])
		require.Equal(t, "inbound", d["direction"])
		require.Equal(t, "+15550004444", d["from_number"])
		require.Equal(t, o.Number, d["to_number"])
		require.Equal(t, "call_1", d["tool_call_id"])
		require.Equal(t, map[string]any{"day": "Thursday"}, d["arguments"])
		require.Equal(t, `{"moved":true}`, d["output"])
		require.Nil(t, d["error"])
		require.Equal(t, false, d["is_error"])
		require.Equal(t, "2026-11-24T10:00:00.000Z", d["started_at"])
		require.Equal(t, "2026-11-24T10:00:01.500Z", d["ended_at"])
		require.Equal(t, float64(1500), d["duration_ms"])
		d = byName["transfer_call"]
		require.Equal(t, map[string]any{}, d["arguments"], "invalid arguments become {}")
		require.Nil(t, d["output"])
		require.Equal(t, "the transfer did not go through", d["error"])
		require.Equal(t, true, d["is_error"])

		// A web call's tool run is web.tool.
		r = a.Do("POST", base, o.AdminK, map[string]any{"label": "web", "url": hook.URL + "/web", "events": []string{"web.tool"}})
		require.Equal(t, 201, r.Status, string(r.Body))
		web, err := log.Admit(ctx, calllog.AdmitRequest{Direction: "web", OrgID: o.Org.ID, AgentID: o.AgentID})
		require.NoError(t, err)
		require.NoError(t, log.ToolEvent(ctx, web.CallID, calllog.ToolRun{Name: "reschedule", Start: start, End: start}))
		ds, err := a.Store.Outbox.EndpointDeliveries(ctx, r.Obj(t)["id"].(string))
		require.NoError(t, err)
		require.Len(t, ds, 1)
		out, err := a.Store.Outbox.ClaimDelivery(ctx, ds[0].ID, time.Now(), time.Minute)
		require.NoError(t, err)
		require.Equal(t, "web.tool", out.Type)
		require.Contains(t, string(out.Data), `"direction":"web"`)
	})
}
