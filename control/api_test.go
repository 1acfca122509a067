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

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// api drives the real router with real stores (controltest.API, under
// the names these tests use).
type api struct {
	t     *testing.T
	srv   *control.Server
	store *storage.Store
	x     *controltest.API
}

func newAPI(t *testing.T, db *storage.DB) *api {
	t.Helper()
	return newAPIWith(t, db, control.Config{PublicURL: "https://voice.example"})
}

// newAPIWith is newAPI with a given configuration and options.
func newAPIWith(t *testing.T, db *storage.DB, cfg control.Config, opts ...control.Option) *api {
	t.Helper()
	x := controltest.NewWith(t, db, cfg, opts...)
	return &api{t: t, srv: x.Srv, store: x.Store, x: x}
}

type resp struct {
	status int
	body   []byte
	header http.Header
}

func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	return controltest.Resp{Status: r.status, Body: r.body, Header: r.header}.Obj(t)
}

func (r resp) list(t *testing.T) []map[string]any {
	t.Helper()
	return controltest.Resp{Status: r.status, Body: r.body, Header: r.header}.List(t)
}

// do sends a request. auth is "Bearer sk_..." or "Token pt_...|orgID".
func (a *api) do(method, path, auth string, body any) resp {
	a.t.Helper()
	r := a.x.Do(method, path, auth, body)
	return resp{status: r.Status, body: r.Body, header: r.Header}
}

// world is an org with an owner, an admin and a member, each with an API
// key and a personal token (controltest.World).
type world struct {
	org                   storage.Org
	owner, admin, member  storage.User
	ownerM, adminM, membM storage.Member
	ownerK, adminK, membK string
	ownerT, adminT, membT string
}

func (a *api) world() world {
	a.t.Helper()
	w := a.x.World()
	return world{org: w.Org, owner: w.Owner, admin: w.Admin, member: w.Member, ownerM: w.OwnerM, adminM: w.AdminM, membM: w.MembM,
		ownerK: w.OwnerK, adminK: w.AdminK, membK: w.MembK, ownerT: w.OwnerT, adminT: w.AdminT, membT: w.MembT}
}

func (w world) orgHdr() string { return fmt.Sprint("|", w.org.ID) }

func TestAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)

		t.Run("healthz needs no credential", func(t *testing.T) {
			r := a.do("GET", "/v1/healthz", "", nil)
			require.Equal(t, 200, r.status)
			require.Equal(t, true, r.obj(t)["ok"])
			require.NotEmpty(t, r.header.Get("X-Request-Id"))
		})

		t.Run("authentication", func(t *testing.T) {
			w := a.world()
			for _, auth := range []string{"", "Bearer", "Bearer sk_live_nope", "Bearer pk_live_0123456789ab", "Basic abc", "Token pt_nope|1"} {
				r := a.do("GET", "/v1/members", auth, nil)
				require.Equal(t, 401, r.status, "auth %q", auth)
				require.Contains(t, r.obj(t), "detail")
			}
			require.Equal(t, 200, a.do("GET", "/v1/members", w.membK, nil).status)
			// X-Service-Org is ignored for API keys.
			require.Equal(t, 200, a.do("GET", "/v1/members", w.membK+"|999999", nil).status)
			// Personal tokens need X-Service-Org for org routes, and membership.
			r := a.do("GET", "/v1/members", w.membT, nil)
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t)["detail"], "X-Service-Org")
			require.Equal(t, 200, a.do("GET", "/v1/members", w.membT+w.orgHdr(), nil).status)
			require.Equal(t, 403, a.do("GET", "/v1/members", w.membT+"|999999", nil).status)
			require.Equal(t, 400, a.do("GET", "/v1/members", w.membT+"|abc", nil).status)
		})

		t.Run("legacy org paths are gone", func(t *testing.T) {
			w := a.world()
			r := a.do("GET", fmt.Sprintf("/v1/orgs/%d/members", w.org.ID), w.ownerK, nil)
			require.Equal(t, 410, r.status)
			m := r.obj(t)
			require.Equal(t, fmt.Sprintf("/v1/orgs/%d/members", w.org.ID), m["legacy_path"])
			require.Equal(t, "/v1/members", m["new_path"])
			require.NotEmpty(t, m["detail"])
			r = a.do("POST", "/v1/orgs/7/developer/api-keys", "", nil)
			require.Equal(t, 410, r.status)
			require.Equal(t, "/v1/developer/api-keys", r.obj(t)["new_path"])
		})

		t.Run("last_used_at is recorded without a write per request", func(t *testing.T) {
			w := a.world()
			before := time.Now().Add(-time.Second)
			require.Equal(t, 200, a.do("GET", "/v1/members", w.adminK, nil).status)
			// Nothing is written until the flusher runs (every 10 s) or the server closes.
			keys, err := a.store.Keys.APIKeys(context.Background(), w.org.ID)
			require.NoError(t, err)
			for _, k := range keys {
				require.Nil(t, k.LastUsedAt)
			}
			b := newAPI(t, db) // a second server over the same database
			require.Equal(t, 200, b.do("GET", "/v1/members", w.ownerK, nil).status)
			b.srv.Close()
			keys, err = a.store.Keys.APIKeys(context.Background(), w.org.ID)
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
			w := a.world()
			for _, body := range []string{"{", `{"name": "x"} trailing`, "null", "", "\"str\"", `{"name": ["a"]}`} {
				r := a.do("POST", "/v1/orgs/", w.ownerK, body)
				require.Equal(t, 400, r.status, "body %q", body)
				require.NotEmpty(t, r.body)
			}
			// Oversized bodies are refused by the HTTP server itself: use a real listener.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			go a.srv.Serve(ln)
			// Announce a 3 MiB body; the server answers having read at most
			// its first 8 KiB (bodies are streamed: fasthttp reads that much
			// before the route's limit can refuse the rest).
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			fmt.Fprintf(conn, "POST /v1/orgs/ HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{%s", w.ownerK, 3<<20, strings.Repeat(" ", 8<<10))
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			hr, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			b, _ := io.ReadAll(hr.Body)
			conn.Close()
			require.Equal(t, 400, hr.StatusCode, string(b))
			require.Contains(t, string(b), "too large")
			ln.Close()
			require.Equal(t, 404, a.do("GET", "/v1/nothing-here", w.ownerK, nil).status)
			require.Equal(t, 405, a.do("PUT", fmt.Sprintf("/v1/orgs/%d/", w.org.ID), w.ownerK, map[string]any{}).status)
			// A method a known path does not serve is 405 with Allow,
			// before any credential check; unknown paths stay 404.
			for _, tc := range []struct{ method, path, allow string }{
				{"PUT", "/v1/developer/api-keys", "GET, HEAD, POST"},
				{"DELETE", "/v1/healthz", "GET, HEAD"},
				{"POST", "/v1/agents/123", "DELETE, GET, HEAD, PATCH"},
				{"PUT", "/v1/members/7/role", "PATCH"},
			} {
				r := a.do(tc.method, tc.path, "", nil)
				require.Equal(t, 405, r.status, "%s %s: %s", tc.method, tc.path, r.body)
				require.Equal(t, tc.allow, r.header.Get("Allow"), "%s %s", tc.method, tc.path)
				require.Contains(t, r.obj(t), "detail")
			}
			require.Equal(t, 404, a.do("PUT", "/v1/agents/123/nothing", w.ownerK, nil).status)
		})
	})
}
