package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestWebhookEndpointsAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Webhooks: webhook.Config{AllowLoopback: true}})
		ctx := context.Background()
		w := a.World()
		const base = "/v1/developer/webhook-endpoints"

		t.Run("admin+ only", func(t *testing.T) {
			require.Equal(t, 403, a.Do("GET", base, w.MembK, nil).Status)
			require.Equal(t, 403, a.Do("POST", base, w.MembK, map[string]any{"label": "x", "url": "https://a.example"}).Status)
			require.Equal(t, 200, a.Do("GET", base, w.AdminK, nil).Status)
		})

		t.Run("validation", func(t *testing.T) {
			for _, tc := range []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"url": "https://a.example"}, "label"},
				{map[string]any{"label": " ", "url": "https://a.example"}, "label"},
				{map[string]any{"label": strings.Repeat("x", 121), "url": "https://a.example"}, "label"},
				{map[string]any{"label": "x"}, "url"},
				{map[string]any{"label": "x", "url": "ftp://a.example/"}, "url"},
				{map[string]any{"label": "x", "url": "http://a.example/"}, "url"},
				{map[string]any{"label": "x", "url": "http://[::1]:8080/"}, "url"},
				{map[string]any{"label": "x", "url": "http://10.0.0.1/"}, "url"},
				{map[string]any{"label": "x", "url": "https://user:pw@a.example/"}, "url"},
				{map[string]any{"label": "x", "url": "not a url"}, "url"},
				{map[string]any{"label": "x", "url": "https://a.example", "events": []string{"call.graded", "call.exploded"}}, "events"},
				{map[string]any{"label": "x", "url": "https://a.example", "events": []string{"webhook.test"}}, "events"},
			} {
				r := a.Do("POST", base, w.AdminK, tc.body)
				require.Equal(t, 400, r.Status, "%v", tc.body)
				require.Contains(t, r.Obj(t), tc.field, "%v: %s", tc.body, r.Body)
			}
			r := a.Do("POST", base, w.AdminK, map[string]any{"label": "x", "url": "https://a.example", "events": "call.graded"})
			require.Equal(t, 400, r.Status, "events must be a list")
		})

		t.Run("lifecycle", func(t *testing.T) {
			r := a.Do("POST", base, w.AdminK, map[string]any{"label": " Prod ", "url": "https://hooks.example/voiced",
				"events": []string{"call.graded", "telephony.complete", "call.graded"}})
			require.Equal(t, 201, r.Status, string(r.Body))
			e := r.Obj(t)
			secret := e["secret"].(string)
			require.Regexp(t, `^[0-9a-f]{48}$`, secret)
			require.Equal(t, secret[:4]+"…"+secret[44:], e["secret_hint"])
			require.Equal(t, "Prod", e["label"])
			require.Equal(t, "active", e["status"])
			require.Equal(t, []any{"call.graded", "telephony.complete"}, e["events"], "duplicates removed")
			id := e["id"].(string)

			for _, url := range []string{"http://localhost:9000/h", "http://127.0.0.1:9000/h"} {
				r := a.Do("POST", base, w.OwnerK, map[string]any{"label": "local", "url": url})
				require.Equal(t, 201, r.Status, url)
				require.Equal(t, []any{}, r.Obj(t)["events"], "no events means all")
			}

			l := a.Do("GET", base, w.AdminK, nil).List(t)
			require.Len(t, l, 3)
			require.Equal(t, id, l[0]["id"], "oldest first")
			require.NotContains(t, l[0], "secret", "the secret is shown once")

			r = a.Do("PATCH", base+"/"+id, w.AdminK, map[string]any{"label": "Renamed", "events": []string{}, "status": "disabled"})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "Renamed", r.Obj(t)["label"])
			require.Equal(t, "disabled", r.Obj(t)["status"])
			require.Equal(t, []any{}, r.Obj(t)["events"])
			require.Equal(t, 400, a.Do("PATCH", base+"/"+id, w.AdminK, map[string]any{"status": "failing"}).Status, "failing is the server's")
			require.Equal(t, 400, a.Do("PATCH", base+"/"+id, w.AdminK, map[string]any{"url": "http://evil.example"}).Status)
			require.Equal(t, 404, a.Do("PATCH", base+"/nope", w.AdminK, map[string]any{"label": "x"}).Status)

			other := a.World()
			require.Equal(t, 404, a.Do("PATCH", base+"/"+id, other.AdminK, map[string]any{"label": "x"}).Status, "another org's endpoint")
			require.Equal(t, 404, a.Do("DELETE", base+"/"+id, other.AdminK, nil).Status)

			require.Equal(t, 204, a.Do("DELETE", base+"/"+id, w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", base+"/"+id, w.AdminK, nil).Status)
		})

		t.Run("test event", func(t *testing.T) {
			var mu sync.Mutex
			var got []map[string]any
			var sigs []string
			var raws [][]byte
			code := http.StatusOK
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				var m map[string]any
				_ = json.Unmarshal(raw, &m)
				mu.Lock()
				got, sigs, raws = append(got, m), append(sigs, r.Header.Get("X-Service-Signature")), append(raws, raw)
				c := code
				mu.Unlock()
				rw.WriteHeader(c)
			}))
			defer srv.Close()
			r := a.Do("POST", base, w.AdminK, map[string]any{"label": "t", "url": srv.URL + "/hook", "events": []string{"call.graded"}})
			require.Equal(t, 201, r.Status, string(r.Body))
			ep := r.Obj(t)
			id, secret := ep["id"].(string), ep["secret"].(string)

			r = a.Do("POST", base+"/"+id+"/test", w.AdminK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			res := r.Obj(t)
			require.Equal(t, true, res["success"])
			require.Equal(t, "webhook.test", res["event_type"])
			require.Equal(t, "delivered", res["status"])
			require.Equal(t, float64(200), res["response_code"])
			require.Nil(t, res["error"])
			mu.Lock()
			require.Len(t, got, 1, "sent although the filter has only call.graded")
			require.Equal(t, res["event_id"], got[0]["event_id"])
			require.Equal(t, "webhook.test", got[0]["type"])
			require.Equal(t, webhook.Sign(secret, raws[0]), sigs[0])
			code = http.StatusInternalServerError
			mu.Unlock()

			r = a.Do("POST", base+"/"+id+"/test", w.AdminK, nil)
			require.Equal(t, 200, r.Status, "200 even when the destination errored")
			res = r.Obj(t)
			require.Equal(t, false, res["success"])
			require.Equal(t, "pending", res["status"], "retried on the schedule")
			require.Equal(t, float64(500), res["response_code"])
			require.Equal(t, "HTTP 500", res["error"])
			ds, err := a.Store.Outbox.EventDeliveries(ctx, res["event_id"].(string))
			require.NoError(t, err)
			require.Equal(t, 1, ds[0].Attempts)

			require.Equal(t, 404, a.Do("POST", base+"/nope/test", w.AdminK, nil).Status)
			require.Equal(t, 403, a.Do("POST", base+"/"+id+"/test", w.MembK, nil).Status)

			// Deleting the endpoint abandons the pending retry.
			require.Equal(t, 204, a.Do("DELETE", base+"/"+id, w.AdminK, nil).Status)
			ds, _ = a.Store.Outbox.EventDeliveries(ctx, res["event_id"].(string))
			require.Empty(t, ds)
		})
	})
}
