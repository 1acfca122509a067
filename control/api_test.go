package control_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.New(t, db)

		t.Run("healthz needs no credential", func(t *testing.T) {
			r := a.Do("GET", "/v1/healthz", "", nil)
			require.Equal(t, 200, r.Status)
			require.Equal(t, true, r.Obj(t)["ok"])
			require.NotEmpty(t, r.Header.Get("X-Request-Id"))
		})

		t.Run("authentication", func(t *testing.T) {
			w := a.World()
			for _, auth := range []string{"", "Bearer", "Bearer sk_live_nope", "Bearer pk_live_0123456789ab", "Basic abc", "Token pt_nope|1"} {
				r := a.Do("GET", "/v1/members", auth, nil)
				require.Equal(t, 401, r.Status, "auth %q", auth)
				require.Contains(t, r.Obj(t), "detail")
			}
			require.Equal(t, 200, a.Do("GET", "/v1/members", w.MembK, nil).Status)
			// X-Service-Org is ignored for API keys.
			require.Equal(t, 200, a.Do("GET", "/v1/members", w.MembK+"|999999", nil).Status)
			// Personal tokens need X-Service-Org for org routes, and membership.
			r := a.Do("GET", "/v1/members", w.MembT, nil)
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "X-Service-Org")
			require.Equal(t, 200, a.Do("GET", "/v1/members", w.MembT+w.OrgHdr(), nil).Status)
			require.Equal(t, 403, a.Do("GET", "/v1/members", w.MembT+"|999999", nil).Status)
			require.Equal(t, 400, a.Do("GET", "/v1/members", w.MembT+"|abc", nil).Status)
		})

		t.Run("legacy org paths are gone", func(t *testing.T) {
			w := a.World()
			r := a.Do("GET", fmt.Sprintf("/v1/orgs/%d/members", w.Org.ID), w.OwnerK, nil)
			require.Equal(t, 410, r.Status)
			m := r.Obj(t)
			require.Equal(t, fmt.Sprintf("/v1/orgs/%d/members", w.Org.ID), m["legacy_path"])
			require.Equal(t, "/v1/members", m["new_path"])
			require.NotEmpty(t, m["detail"])
			r = a.Do("POST", "/v1/orgs/7/developer/api-keys", "", nil)
			require.Equal(t, 410, r.Status)
			require.Equal(t, "/v1/developer/api-keys", r.Obj(t)["new_path"])
		})

		t.Run("last_used_at is recorded without a write per request", func(t *testing.T) {
			w := a.World()
			before := time.Now().Add(-time.Second)
			require.Equal(t, 200, a.Do("GET", "/v1/members", w.AdminK, nil).Status)
			// Nothing is written until the flusher runs (every 10 s) or the server closes.
			keys, err := a.Store.Keys.APIKeys(context.Background(), w.Org.ID)
			require.NoError(t, err)
			for _, k := range keys {
				require.Nil(t, k.LastUsedAt)
			}
			b := controltest.New(t, db) // a second server over the same database
			require.Equal(t, 200, b.Do("GET", "/v1/members", w.OwnerK, nil).Status)
			b.Srv.Close()
			keys, err = a.Store.Keys.APIKeys(context.Background(), w.Org.ID)
			require.NoError(t, err)
			used := 0
			for _, k := range keys {
				if k.LastUsedAt != nil {
					used++
					require.True(t, k.LastUsedAt.After(before))
				}
			}
			require.Equal(t, 1, used, "only the key used on the closed server is flushed")
		})

		t.Run("bad input", func(t *testing.T) {
			w := a.World()
			for _, body := range []string{"{", `{"name": "x"} trailing`, "null", "", "\"str\"", `{"name": ["a"]}`} {
				r := a.Do("POST", "/v1/orgs/", w.OwnerK, body)
				require.Equal(t, 400, r.Status, "body %q", body)
				require.NotEmpty(t, r.Body)
			}
			// Oversized bodies are refused by the HTTP server itself: use a real listener.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			go a.Srv.Serve(ln)
			// Announce a 3 MiB body; the server answers having read at most
			// its first 8 KiB (bodies are streamed: fasthttp reads that much
			// before the route's limit can refuse the rest).
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			fmt.Fprintf(conn, "POST /v1/orgs/ HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{%s", w.OwnerK, 3<<20, strings.Repeat(" ", 8<<10))
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			hr, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			b, _ := io.ReadAll(hr.Body)
			conn.Close()
			require.Equal(t, 400, hr.StatusCode, string(b))
			require.Contains(t, string(b), "too large")
			ln.Close()
			require.Equal(t, 404, a.Do("GET", "/v1/nothing-here", w.OwnerK, nil).Status)
			require.Equal(t, 405, a.Do("PUT", fmt.Sprintf("/v1/orgs/%d/", w.Org.ID), w.OwnerK, map[string]any{}).Status)
			// A method a known path does not serve is 405 with Allow,
			// before any credential check; unknown paths stay 404.
			for _, tc := range []struct{ method, path, allow string }{
				{"PUT", "/v1/developer/api-keys", "GET, HEAD, POST"},
				{"DELETE", "/v1/healthz", "GET, HEAD"},
				{"POST", "/v1/agents/123", "DELETE, GET, HEAD, PATCH"},
				{"PUT", "/v1/members/7/role", "PATCH"},
			} {
				r := a.Do(tc.method, tc.path, "", nil)
				require.Equal(t, 405, r.Status, "%s %s: %s", tc.method, tc.path, r.Body)
				require.Equal(t, tc.allow, r.Header.Get("Allow"), "%s %s", tc.method, tc.path)
				require.Contains(t, r.Obj(t), "detail")
			}
			require.Equal(t, 404, a.Do("PUT", "/v1/agents/123/nothing", w.OwnerK, nil).Status)
		})
	})
}
