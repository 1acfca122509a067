package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/monitoring"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/sqltest"
)

const monToken = "mon-secret-token"

// newMonitorAPI is newAPIWith on a coordinator the test holds, so it can
// register media nodes.
func newMonitorAPI(t *testing.T, db *storage.DB, cfg control.Config) (*controltest.API, *coord.Local) {
	t.Helper()
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	lim := coord.NewLocal(coord.Config{})
	t.Cleanup(func() { lim.Close() })
	if cfg.PublicURL == "" {
		cfg.PublicURL = "https://voice.example"
	}
	srv, err := control.New(cfg, nil, store, lim)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return &controltest.API{T: t, Srv: srv, Store: store}, lim
}

// heartbeat fetches the status and indexes the products by name.
func heartbeat(t *testing.T, a *controltest.API) (monitoring.Status, map[string]monitoring.ProductStatus) {
	t.Helper()
	r := a.Do("GET", "/v1/status/heartbeat", "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var st monitoring.Status
	require.NoError(t, json.Unmarshal(r.Body, &st))
	by := map[string]monitoring.ProductStatus{}
	for _, p := range st.Products {
		by[p.Name] = p
	}
	require.Len(t, by, 6)
	return st, by
}

func azureAlert(rule, sev, condition string) map[string]any {
	ess := map[string]any{"alertId": "/subscriptions/x/providers/Microsoft.AlertsManagement/alerts/" + rule, "alertRule": rule, "severity": sev,
		"monitorCondition": condition, "firedDateTime": "2026-11-28T01:00:00.123456Z", "description": "5xx on pg-prod-eu-3.internal for org 42",
		"signalType": "Metric", "monitoringService": "Platform", "alertTargetIDs": []string{"/subscriptions/x/resourcegroups/voiced"}}
	if condition == "Resolved" {
		ess["resolvedDateTime"] = "2026-11-28T01:30:00Z"
	}
	return map[string]any{"schemaId": "azureMonitorCommonAlertSchema", "data": map[string]any{"essentials": ess, "alertContext": map[string]any{}}}
}

func TestStatusHeartbeat(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()

		t.Run("public, all operational", func(t *testing.T) {
			a, _ := newMonitorAPI(t, db, control.Config{})
			r := a.Do("GET", "/v1/status/heartbeat", "", nil)
			require.Equal(t, 200, r.Status)
			require.Equal(t, "public, max-age=5", r.Header.Get("Cache-Control"))
			require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
			st, by := heartbeat(t, a)
			require.Equal(t, monitoring.Operational, st.Status)
			require.Empty(t, st.Incidents)
			for _, name := range []string{"api", "telephony", "browser_calls", "realtime", "webhooks", "billing"} {
				require.Equal(t, monitoring.Operational, by[name].Status, name)
				require.Empty(t, by[name].Reasons)
			}
		})

		t.Run("every media node draining is a media outage", func(t *testing.T) {
			a, lim := newMonitorAPI(t, db, control.Config{})
			require.NoError(t, lim.Heartbeat(ctx, coord.Node{ID: "media-7.internal", Addr: "10.0.0.7:9000", Draining: true}))
			r := a.Do("GET", "/v1/status/heartbeat", "", nil)
			require.NotContains(t, string(r.Body), "media-7", "no host names")
			require.NotContains(t, string(r.Body), "10.0.0.7")
			st, by := heartbeat(t, a)
			require.Equal(t, monitoring.Outage, st.Status)
			for _, name := range []string{"telephony", "browser_calls", "realtime"} {
				require.Equal(t, monitoring.Outage, by[name].Status, name)
				require.Equal(t, []string{monitoring.ReasonNoMediaNodes}, by[name].Reasons)
			}
			require.Equal(t, monitoring.Operational, by["api"].Status)
		})

		t.Run("provider error rates degrade or take out their products", func(t *testing.T) {
			a, _ := newMonitorAPI(t, db, control.Config{})
			w := a.Srv.ProviderErrors()
			boom := errors.New("upstream 500 for org 42")
			for i := range 10 {
				var err error
				if i < 3 {
					err = boom
				}
				w.Record(monitoring.ProviderLLM, err)
				w.Record(monitoring.ProviderPayments, boom)
			}
			w.Record(monitoring.ProviderTTS, boom) // one request is too few to judge
			st, by := heartbeat(t, a)
			require.Equal(t, monitoring.Outage, st.Status)
			require.Equal(t, monitoring.Degraded, by["telephony"].Status)
			require.Equal(t, []string{monitoring.ReasonProviderErrors}, by["realtime"].Reasons)
			require.Equal(t, monitoring.Outage, by["billing"].Status)
			require.Equal(t, monitoring.Operational, by["api"].Status)
		})

		t.Run("the verdict is cached; this server's own incidents refresh it", func(t *testing.T) {
			a, _ := newMonitorAPI(t, db, control.Config{MonitoringToken: monToken})
			st, _ := heartbeat(t, a)
			require.Equal(t, monitoring.Operational, st.Status)
			// Written behind the server's back (as another replica would):
			// the cached answer stands.
			_, _, err := a.Store.Incidents.RecordAlert(ctx, storage.Alert{Source: "azure", Key: "elsewhere", Rule: "elsewhere", Product: "webhooks", Severity: "error", Title: "elsewhere"}, nil)
			require.NoError(t, err)
			st2, _ := heartbeat(t, a)
			require.Equal(t, st.CheckedAt, st2.CheckedAt)
			require.Equal(t, monitoring.Operational, st2.Status)
			// Through this server's receiver: recomputed at once.
			r := a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("billing-stripe-latency", "Sev2", "Fired"))
			require.Equal(t, 200, r.Status, "%s", r.Body)
			st3, by := heartbeat(t, a)
			require.Equal(t, monitoring.Degraded, by["webhooks"].Status)
			require.Equal(t, monitoring.Degraded, by["billing"].Status)
			require.Len(t, st3.Incidents, 2)
			for _, rule := range []string{"elsewhere", "billing-stripe-latency"} {
				n, err := a.Store.Incidents.AckIncidentsByRule(ctx, []string{rule})
				require.NoError(t, err)
				require.Equal(t, int64(1), n)
			}
		})

		t.Run("at most 20 incidents are listed; all of them count", func(t *testing.T) {
			a, _ := newMonitorAPI(t, db, control.Config{})
			var rules []string
			for i := range 21 {
				rule := fmt.Sprintf("flood-%d", i)
				product := "api"
				if i == 20 {
					product = "realtime"
				}
				_, _, err := a.Store.Incidents.RecordAlert(ctx, storage.Alert{Source: "glitchtip", Key: rule, Rule: rule, Product: product, Severity: "info", Title: rule,
					At: time.Date(2026, 11, 28, 0, i, 0, 0, time.UTC)}, nil)
				require.NoError(t, err)
				rules = append(rules, rule)
			}
			st, by := heartbeat(t, a)
			require.Len(t, st.Incidents, 20)
			require.Equal(t, "api", st.Incidents[0].Product, "oldest first")
			require.Equal(t, monitoring.Degraded, by["realtime"].Status, "the 21st, unlisted, still counts")
			n, err := a.Store.Incidents.AckIncidentsByRule(ctx, rules)
			require.NoError(t, err)
			require.Equal(t, int64(21), n)
		})

		t.Run("database down is an outage everywhere", func(t *testing.T) {
			a, _ := newMonitorAPI(t, db, control.Config{})
			require.NoError(t, db.Close())
			st, by := heartbeat(t, a)
			require.Equal(t, monitoring.Outage, st.Status)
			for _, p := range by {
				require.Equal(t, monitoring.Outage, p.Status, p.Name)
				require.Contains(t, p.Reasons, monitoring.ReasonDatabase)
			}
		})
	})
}

func TestMonitoringReceivers(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()

		t.Run("off without a token", func(t *testing.T) {
			a, _ := newMonitorAPI(t, db, control.Config{})
			for _, p := range []string{"/v1/monitoring/azure-alert", "/v1/monitoring/glitchtip-alert", "/v1/monitoring/auto-ack"} {
				r := a.Do("POST", p+"?token=", "", map[string]any{})
				require.Equal(t, 404, r.Status, p)
				r = a.Do("POST", p+"?token=anything", "", map[string]any{})
				require.Equal(t, 404, r.Status, p)
			}
		})

		a, _ := newMonitorAPI(t, db, control.Config{MonitoringToken: monToken})
		w := a.World()
		active := func() []storage.Incident {
			t.Helper()
			l, err := a.Store.Incidents.ActiveIncidents(ctx)
			require.NoError(t, err)
			return l
		}

		t.Run("tokens", func(t *testing.T) {
			for _, p := range []string{"/v1/monitoring/azure-alert", "/v1/monitoring/glitchtip-alert", "/v1/monitoring/auto-ack"} {
				for _, q := range []string{"", "?token=", "?token=wrong", "?token=" + monToken + "x"} {
					r := a.Do("POST", p+q, "", azureAlert("x", "Sev1", "Fired"))
					require.Equal(t, 401, r.Status, p+q)
				}
				// An API key is not the monitoring token.
				r := a.Do("POST", p, w.OwnerK, azureAlert("x", "Sev1", "Fired"))
				require.Equal(t, 401, r.Status, p)
			}
			require.Empty(t, active())
		})

		t.Run("malformed Azure alerts store nothing", func(t *testing.T) {
			bad := func(mut func(m map[string]any)) map[string]any {
				m := azureAlert("sip-5xx", "Sev1", "Fired")
				mut(m)
				return m
			}
			ess := func(m map[string]any) map[string]any {
				return m["data"].(map[string]any)["essentials"].(map[string]any)
			}
			cases := []struct {
				name, field string
				body        any
			}{
				{"not JSON", "", "{"},
				{"not an object", "", "[1]"},
				{"schema", "schemaId", bad(func(m map[string]any) { m["schemaId"] = "Microsoft.Insights/activityLogs" })},
				{"no essentials", "data.essentials", map[string]any{"schemaId": "azureMonitorCommonAlertSchema", "data": map[string]any{}}},
				{"no rule", "data.essentials.alertRule", bad(func(m map[string]any) { delete(ess(m), "alertRule") })},
				{"blank rule", "data.essentials.alertRule", bad(func(m map[string]any) { ess(m)["alertRule"] = " " })},
				{"rule type", "data.essentials.alertRule", bad(func(m map[string]any) { ess(m)["alertRule"] = 5 })},
				{"severity", "data.essentials.severity", bad(func(m map[string]any) { ess(m)["severity"] = "Sev9" })},
				{"condition", "data.essentials.monitorCondition", bad(func(m map[string]any) { ess(m)["monitorCondition"] = "Flapping" })},
				{"fired time", "data.essentials.firedDateTime", bad(func(m map[string]any) { ess(m)["firedDateTime"] = "yesterday" })},
			}
			for _, c := range cases {
				r := a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", c.body)
				require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Body)
				if c.field != "" {
					require.Contains(t, r.Obj(t), c.field, c.name)
				}
			}
			require.Empty(t, active())
		})

		var ackURL string
		t.Run("fired opens, repeats count, the org's alert.triggered endpoint gets one event", func(t *testing.T) {
			r := a.Do("POST", "/v1/developer/webhook-endpoints", w.AdminK, map[string]any{"label": "alerts", "url": "https://hooks.example/alerts", "events": []string{"alert.triggered"}})
			require.Equal(t, 201, r.Status, "%s", r.Body)
			alertsEP := r.Obj(t)["id"].(string)
			r = a.Do("POST", "/v1/developer/webhook-endpoints", w.AdminK, map[string]any{"label": "calls", "url": "https://hooks.example/calls", "events": []string{"call.graded"}})
			require.Equal(t, 201, r.Status, "%s", r.Body)
			callsEP := r.Obj(t)["id"].(string)

			r = a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("sip-trunk-5xx", "Sev1", "Fired"))
			require.Equal(t, 200, r.Status, "%s", r.Body)
			var rec struct {
				Incidents []struct {
					ID      int64
					Product string
					Status  string
					New     bool
					Count   int64
					AckURL  string `json:"ack_url"`
				}
			}
			require.NoError(t, json.Unmarshal(r.Body, &rec))
			require.Len(t, rec.Incidents, 1)
			got := rec.Incidents[0]
			require.Equal(t, "telephony", got.Product, "sip in the rule name")
			require.True(t, got.New)
			require.Equal(t, "open", got.Status)
			require.True(t, strings.HasPrefix(got.AckURL, "https://voice.example/v1/monitoring/ack/ack_"), got.AckURL)
			ackURL = got.AckURL

			r = a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("sip-trunk-5xx", "Sev1", "Fired"))
			require.Equal(t, 200, r.Status)
			rec.Incidents = nil
			require.NoError(t, json.Unmarshal(r.Body, &rec))
			require.Equal(t, got.ID, rec.Incidents[0].ID)
			require.False(t, rec.Incidents[0].New)
			require.Equal(t, int64(2), rec.Incidents[0].Count)
			require.Empty(t, rec.Incidents[0].AckURL, "the link is given once")
			require.Len(t, active(), 1)

			ds, err := a.Store.Outbox.EndpointDeliveries(ctx, alertsEP)
			require.NoError(t, err)
			require.Len(t, ds, 1, "one event for the new incident, none for the repeat")
			o, err := a.Store.Outbox.ClaimDelivery(ctx, ds[0].ID, time.Now(), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "alert.triggered", o.Type)
			var data map[string]any
			require.NoError(t, json.Unmarshal(o.Data, &data))
			require.Equal(t, float64(got.ID), data["incident_id"])
			require.Equal(t, "telephony", data["product"])
			require.Equal(t, "error", data["severity"])
			require.Equal(t, "degraded", data["status"])
			require.Equal(t, "2026-11-28T01:00:00.123Z", data["started_at"])
			require.Equal(t, "https://voice.example/v1/status/heartbeat", data["status_url"])
			require.NotContains(t, string(o.Data), "sip-trunk-5xx", "the rule name stays internal")
			require.NotContains(t, string(o.Data), "pg-prod")
			none, err := a.Store.Outbox.EndpointDeliveries(ctx, callsEP)
			require.NoError(t, err)
			require.Empty(t, none)

			st, by := heartbeat(t, a)
			require.Equal(t, monitoring.Degraded, by["telephony"].Status)
			require.Equal(t, []string{monitoring.ReasonIncident}, by["telephony"].Reasons)
			require.Len(t, st.Incidents, 1)
			require.Equal(t, got.ID, st.Incidents[0].ID)
			body, _ := json.Marshal(st)
			require.NotContains(t, string(body), "sip-trunk-5xx")
			require.NotContains(t, string(body), "pg-prod")
		})

		t.Run("ack link: 200 once, then 410; unknown 404", func(t *testing.T) {
			u, err := url.Parse(ackURL)
			require.NoError(t, err)
			r := a.Do("GET", u.Path, "", nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			m := r.Obj(t)
			require.Equal(t, "acknowledged", m["status"])
			require.Equal(t, "sip-trunk-5xx", m["rule"])
			require.NotEmpty(t, m["acknowledged_at"])
			r = a.Do("GET", u.Path, "", nil)
			require.Equal(t, 410, r.Status)
			require.NotEmpty(t, r.Obj(t)["detail"])
			r = a.Do("GET", "/v1/monitoring/ack/ack_0000", "", nil)
			require.Equal(t, 404, r.Status)
			require.Empty(t, active())
			st, by := heartbeat(t, a)
			require.Empty(t, st.Incidents, "acknowledged: off the heartbeat")
			require.Equal(t, monitoring.Operational, by["telephony"].Status)
			// Still open: a repeat counts on it, silently.
			r = a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("sip-trunk-5xx", "Sev1", "Fired"))
			require.Equal(t, 200, r.Status)
			require.Contains(t, string(r.Body), `"count":3`)
			require.Empty(t, active())
		})

		t.Run("resolved resolves; nothing open is a 200 with no incidents", func(t *testing.T) {
			r := a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("sip-trunk-5xx", "Sev1", "Resolved"))
			require.Equal(t, 200, r.Status, "%s", r.Body)
			require.Contains(t, string(r.Body), `"status":"resolved"`)
			r = a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("sip-trunk-5xx", "Sev1", "Resolved"))
			require.Equal(t, 200, r.Status)
			require.JSONEq(t, `{"incidents":[]}`, string(r.Body))
			// Firing again after it resolved is a new incident.
			r = a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("sip-trunk-5xx", "Sev1", "Fired"))
			require.Equal(t, 200, r.Status)
			require.Contains(t, string(r.Body), `"new":true`)
			r = a.Do("POST", "/v1/monitoring/azure-alert?token="+monToken, "", azureAlert("sip-trunk-5xx", "Sev1", "Resolved"))
			require.Equal(t, 200, r.Status)
			require.Empty(t, active())
		})

		t.Run("GlitchTip alerts", func(t *testing.T) {
			gt := map[string]any{"alias": "GlitchTip", "text": "GlitchTip Alert", "attachments": []any{
				map[string]any{"title": "KeyError: 'call_id'", "title_link": "https://gt.example/acme/issues/17", "text": "control/realtime.go", "color": "#e52b50",
					"fields": []any{map[string]any{"title": "Project", "value": "voiced-realtime", "short": true}, map[string]any{"title": "Environment", "value": "prod", "short": true}}},
				map[string]any{"title": "TimeoutError in worker", "title_link": "https://gt.example/acme/issues/18"},
			}}
			r := a.Do("POST", "/v1/monitoring/glitchtip-alert?token="+monToken, "", gt)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			var rec struct{ Incidents []map[string]any }
			require.NoError(t, json.Unmarshal(r.Body, &rec))
			require.Len(t, rec.Incidents, 2)
			require.Equal(t, "realtime", rec.Incidents[0]["product"], "from the Project field")
			require.Equal(t, "api", rec.Incidents[1]["product"], "nothing known: the API")
			r = a.Do("POST", "/v1/monitoring/glitchtip-alert?token="+monToken, "", gt)
			require.Equal(t, 200, r.Status)
			require.Len(t, active(), 2, "the same issues count on their incidents")

			for name, body := range map[string]any{
				"no attachments":    map[string]any{"alias": "GlitchTip", "text": "x"},
				"empty attachments": map[string]any{"attachments": []any{}},
				"untitled":          map[string]any{"attachments": []any{map[string]any{"title_link": "https://gt.example/acme/issues/19"}}},
				"wrong type":        map[string]any{"attachments": "x"},
			} {
				r := a.Do("POST", "/v1/monitoring/glitchtip-alert?token="+monToken, "", body)
				require.Equal(t, 400, r.Status, name)
				require.Contains(t, string(r.Body), "attachments", name)
			}
			require.Len(t, active(), 2)
		})

		t.Run("auto-ack by rule", func(t *testing.T) {
			for name, body := range map[string]any{
				"empty":      map[string]any{},
				"blank rule": map[string]any{"rule": ""},
				"blank list": map[string]any{"rules": []string{"x", " "}},
				"wrong type": map[string]any{"rules": "x"},
			} {
				r := a.Do("POST", "/v1/monitoring/auto-ack?token="+monToken, "", body)
				require.Equal(t, 400, r.Status, name)
				require.Contains(t, string(r.Body), "rule", name)
			}
			r := a.Do("POST", "/v1/monitoring/auto-ack?token="+monToken, "", map[string]any{"rule": "KeyError: 'call_id'"})
			require.Equal(t, 200, r.Status, "%s", r.Body)
			require.JSONEq(t, `{"acknowledged":1}`, string(r.Body))
			r = a.Do("POST", "/v1/monitoring/auto-ack?token="+monToken, "", map[string]any{"rules": []string{"KeyError: 'call_id'", "TimeoutError in worker", "nothing"}})
			require.Equal(t, 200, r.Status)
			require.JSONEq(t, `{"acknowledged":1}`, string(r.Body))
			require.Empty(t, active())
		})
	})
}

func TestMonitoringOpenAPI(t *testing.T) {
	a, _ := newMonitorAPI(t, sqltest.New(t, "sqlite"), control.Config{})
	doc := a.Do("GET", "/v1/openapi.json", "", nil).Obj(t)
	paths := doc["paths"].(map[string]any)
	op := paths["/v1/monitoring/azure-alert"].(map[string]any)["post"].(map[string]any)
	require.Equal(t, []any{map[string]any{"name": "token", "in": "query", "required": true, "schema": map[string]any{"type": "string"}}}, op["parameters"])
	require.Equal(t, []any{}, op["security"])
	for _, code := range []string{"200", "400", "401", "404"} {
		require.Contains(t, op["responses"], code)
	}
	ack := paths["/v1/monitoring/ack/{token}"].(map[string]any)["get"].(map[string]any)
	for _, code := range []string{"200", "404", "410"} {
		require.Contains(t, ack["responses"], code)
	}
	require.Contains(t, paths["/v1/status/heartbeat"], "get")
	require.Contains(t, paths["/v1/monitoring/auto-ack"], "post")
	require.Contains(t, paths["/v1/monitoring/glitchtip-alert"], "post")
}
