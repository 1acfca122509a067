package webhook_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestLegacyWebhookAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.New(t, db)

		t.Run("webhook", func(t *testing.T) {
			w := a.World()
			require.Equal(t, 404, a.Do("GET", "/v1/webhook", w.OwnerK, nil).Status)
			require.Equal(t, 403, a.Do("PUT", "/v1/webhook", w.MembK, map[string]any{"url": "https://x.example/h"}).Status)
			r := a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "http://x.example/h"})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "url")
			require.Equal(t, 400, a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "not a url"}).Status)
			require.Equal(t, 400, a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{}).Status)
			// One rule for every outbound URL (CheckURL): credentials are
			// refused here as for endpoints, and a numeric host is stored as
			// the address it names.
			r = a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "https://user:pw@x.example/h"})
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "url")
			r = a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "http://2130706433:9000/h"})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "http://127.0.0.1:9000/h", r.Obj(t)["url"])
			require.Equal(t, 400, a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "https://1.2.3.999/h"}).Status)
			r = a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "http://localhost:9000/h"})
			require.Equal(t, 200, r.Status, string(r.Body))
			s1 := r.Obj(t)["secret"]
			r = a.Do("PATCH", "/v1/webhook", w.AdminK, map[string]any{"url": "https://y.example/h"})
			require.Equal(t, 200, r.Status)
			require.Equal(t, s1, r.Obj(t)["secret"], "PATCH keeps the secret")
			r = a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "https://y.example/h"})
			require.NotEqual(t, s1, r.Obj(t)["secret"], "PUT rotates it")
			g := a.Do("GET", "/v1/webhook", w.OwnerK, nil).Obj(t)
			require.Equal(t, "https://y.example/h", g["url"])
			require.Equal(t, 403, a.Do("GET", "/v1/webhook", w.MembK, nil).Status)
		})
	})
}
