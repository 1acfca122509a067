package control_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/sqltest"
)

// api drives the real router with real stores.
type api struct {
	t     *testing.T
	srv   *control.Server
	store *storage.Store
}

func newAPI(t *testing.T, db *storage.DB) *api {
	t.Helper()
	return newAPIWith(t, db, control.Config{PublicURL: "https://voice.example"})
}

// newAPIWith is newAPI with a given configuration and options.
func newAPIWith(t *testing.T, db *storage.DB, cfg control.Config, opts ...control.Option) *api {
	t.Helper()
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	lim := coord.NewLocal(coord.Config{})
	t.Cleanup(func() { lim.Close() })
	srv, err := control.New(cfg, nil, store, lim, opts...)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return &api{t: t, srv: srv, store: store}
}

type resp struct {
	status int
	body   []byte
	header http.Header
}

func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

func (r resp) list(t *testing.T) []map[string]any {
	t.Helper()
	var l []map[string]any
	require.NoError(t, json.Unmarshal(r.body, &l), "body: %s", r.body)
	return l
}

// do sends a request. auth is "Bearer sk_..." or "Token pt_...|orgID".
func (a *api) do(method, path, auth string, body any) resp {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(a.t, err)
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		cred, org, _ := strings.Cut(auth, "|")
		req.Header.Set("Authorization", cred)
		if org != "" {
			req.Header.Set("X-Service-Org", org)
		}
	}
	res, err := a.srv.App().Test(req, fiber.TestConfig{Timeout: 30 * time.Second})
	require.NoError(a.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	return resp{status: res.StatusCode, body: b, header: res.Header}
}

// world is an org with an owner, an admin and a member, each with an API
// key and a personal token.
type world struct {
	org                   storage.Org
	owner, admin, member  storage.User
	ownerM, adminM, membM storage.Member
	ownerK, adminK, membK string
	ownerT, adminT, membT string
}

func (a *api) world() world {
	t := a.t
	t.Helper()
	ctx := context.Background()
	s := a.store
	tag := storage.NewUUID()[28:]
	var w world
	mk := func(name string) storage.User {
		u, err := s.Orgs.CreateUser(ctx, name+"-"+tag+"@example.com", name, "Test")
		require.NoError(t, err)
		return u
	}
	w.owner, w.admin, w.member = mk("owner"), mk("admin"), mk("member")
	var err error
	w.org, err = s.Orgs.CreateOrg(ctx, w.owner.ID, "Acme "+tag)
	require.NoError(t, err)
	w.ownerM, _ = s.Orgs.MemberByUser(ctx, w.org.ID, w.owner.ID)
	w.adminM, err = s.Orgs.AddMember(ctx, w.org.ID, w.admin.ID, storage.RoleAdmin)
	require.NoError(t, err)
	w.membM, err = s.Orgs.AddMember(ctx, w.org.ID, w.member.ID, storage.RoleMember)
	require.NoError(t, err)
	key := func(u storage.User) string {
		_, raw, err := s.Keys.CreateAPIKey(ctx, w.org.ID, u.ID, "k")
		require.NoError(t, err)
		return "Bearer " + raw
	}
	tok := func(u storage.User) string {
		raw, err := s.Keys.CreatePersonalToken(ctx, u.ID, "t")
		require.NoError(t, err)
		return "Token " + raw
	}
	w.ownerK, w.adminK, w.membK = key(w.owner), key(w.admin), key(w.member)
	w.ownerT, w.adminT, w.membT = tok(w.owner), tok(w.admin), tok(w.member)
	return w
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

		t.Run("orgs", func(t *testing.T) {
			w := a.world()
			r := a.do("GET", "/v1/orgs/", w.ownerK, nil)
			require.Equal(t, 200, r.status)
			l := r.list(t)
			require.Len(t, l, 1)
			require.Equal(t, float64(w.org.ID), l[0]["id"])
			require.Equal(t, "owner", l[0]["role"])
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, l[0]["created_at"])

			r = a.do("POST", "/v1/orgs/", w.membT, map[string]any{"name": "  Side project "})
			require.Equal(t, 201, r.status, string(r.body))
			side := r.obj(t)
			require.Equal(t, "Side project", side["name"])
			require.Equal(t, "owner", side["role"])
			sideID := int64(side["id"].(float64))
			r = a.do("GET", "/v1/orgs/", w.membT, nil)
			require.Len(t, r.list(t), 2)

			require.Equal(t, 400, a.do("POST", "/v1/orgs/", w.membT, map[string]any{"name": ""}).status)
			require.Equal(t, 400, a.do("POST", "/v1/orgs/", w.membT, map[string]any{"name": strings.Repeat("x", 121)}).status)
			r = a.do("POST", "/v1/orgs/", w.membT, map[string]any{})
			require.Equal(t, 400, r.status)
			require.Equal(t, []any{"This field is required."}, r.obj(t)["name"])
			require.Equal(t, 400, a.do("POST", "/v1/orgs/", w.membT, map[string]any{"name": 12}).status)

			require.Equal(t, 200, a.do("GET", fmt.Sprintf("/v1/orgs/%d/", w.org.ID), w.membT, nil).status)
			require.Equal(t, 404, a.do("GET", fmt.Sprintf("/v1/orgs/%d/", sideID), w.ownerT, nil).status)
			require.Equal(t, 404, a.do("GET", fmt.Sprintf("/v1/orgs/%d/", sideID), w.membK, nil).status, "keys see only their org")
			require.Equal(t, 404, a.do("GET", "/v1/orgs/abc/", w.membT, nil).status)

			require.Equal(t, 403, a.do("PATCH", fmt.Sprintf("/v1/orgs/%d/", w.org.ID), w.membT, map[string]any{"name": "X"}).status)
			r = a.do("PATCH", fmt.Sprintf("/v1/orgs/%d/", w.org.ID), w.adminT, map[string]any{"name": "Renamed"})
			require.Equal(t, 200, r.status)
			require.Equal(t, "Renamed", r.obj(t)["name"])

			// Delete: owner only; not with other members; not the only org.
			require.Equal(t, 403, a.do("DELETE", fmt.Sprintf("/v1/orgs/%d/", w.org.ID), w.adminT, nil).status)
			r = a.do("DELETE", fmt.Sprintf("/v1/orgs/%d/", w.org.ID), w.ownerT, nil)
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t)["detail"], "members")
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/orgs/%d/", sideID), w.membT, nil).status)
			require.Equal(t, 404, a.do("DELETE", fmt.Sprintf("/v1/orgs/%d/", sideID), w.membT, nil).status)
			lone := a.world()
			r = a.do("DELETE", fmt.Sprintf("/v1/orgs/%d/", lone.org.ID), lone.ownerT, nil)
			require.Equal(t, 400, r.status) // other members remain
		})

		t.Run("only org cannot be deleted", func(t *testing.T) {
			ctx := context.Background()
			u, err := a.store.Orgs.CreateUser(ctx, "solo-"+storage.NewUUID()[28:]+"@example.com", "", "")
			require.NoError(t, err)
			o, err := a.store.Orgs.CreateOrg(ctx, u.ID, "Solo")
			require.NoError(t, err)
			tok, err := a.store.Keys.CreatePersonalToken(ctx, u.ID, "t")
			require.NoError(t, err)
			r := a.do("DELETE", fmt.Sprintf("/v1/orgs/%d/", o.ID), "Token "+tok, nil)
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t)["detail"], "only organization")
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

		t.Run("members", func(t *testing.T) {
			w := a.world()
			r := a.do("GET", "/v1/members", w.membK, nil)
			require.Equal(t, 200, r.status)
			l := r.list(t)
			require.Len(t, l, 3)
			require.Equal(t, []any{"owner", "admin", "member"}, []any{l[0]["role"], l[1]["role"], l[2]["role"]})
			require.Equal(t, float64(w.ownerM.ID), l[0]["id"], "membership id, not user id")
			require.Equal(t, false, l[0]["has_passkey"])

			mid := func(m storage.Member) string { return fmt.Sprint(m.ID) }
			require.Equal(t, 403, a.do("DELETE", "/v1/members/"+mid(w.adminM), w.membK, nil).status)
			require.Equal(t, 400, a.do("DELETE", "/v1/members/"+mid(w.adminM), w.adminK, nil).status, "self-removal")
			require.Equal(t, 403, a.do("DELETE", "/v1/members/"+mid(w.ownerM), w.adminK, nil).status, "owner")
			require.Equal(t, 404, a.do("DELETE", "/v1/members/999999999", w.adminK, nil).status)

			require.Equal(t, 403, a.do("PATCH", "/v1/members/"+mid(w.membM)+"/role", w.adminK, map[string]any{"role": "admin"}).status)
			r = a.do("PATCH", "/v1/members/"+mid(w.membM)+"/role", w.ownerK, map[string]any{"role": "owner"})
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t), "role")
			require.Equal(t, 400, a.do("PATCH", "/v1/members/"+mid(w.membM)+"/role", w.ownerK, map[string]any{"role": true}).status)
			require.Equal(t, 400, a.do("PATCH", "/v1/members/"+mid(w.ownerM)+"/role", w.ownerK, map[string]any{"role": "member"}).status)
			require.Equal(t, 404, a.do("PATCH", "/v1/members/999999999/role", w.ownerK, map[string]any{"role": "member"}).status)
			r = a.do("PATCH", "/v1/members/"+mid(w.membM)+"/role", w.ownerK, map[string]any{"role": "admin"})
			require.Equal(t, 200, r.status)
			require.Equal(t, "admin", r.obj(t)["role"])
			// Now an admin: the other admin cannot remove them; the owner can.
			require.Equal(t, 403, a.do("DELETE", "/v1/members/"+mid(w.membM), w.adminK, nil).status)
			require.Equal(t, 204, a.do("DELETE", "/v1/members/"+mid(w.membM), w.ownerK, nil).status)
			// The removed member's key died with the membership.
			require.Equal(t, 401, a.do("GET", "/v1/members", w.membK, nil).status)
		})

		t.Run("transfer ownership and leave", func(t *testing.T) {
			w := a.world()
			mid := func(m storage.Member) string { return fmt.Sprint(m.ID) }
			require.Equal(t, 403, a.do("POST", "/v1/members/"+mid(w.membM)+"/transfer-ownership", w.adminK, nil).status)
			require.Equal(t, 400, a.do("POST", "/v1/members/"+mid(w.ownerM)+"/transfer-ownership", w.ownerK, nil).status)
			require.Equal(t, 404, a.do("POST", "/v1/members/999999999/transfer-ownership", w.ownerK, nil).status)
			r := a.do("POST", "/v1/members/"+mid(w.adminM)+"/transfer-ownership", w.ownerK, nil)
			require.Equal(t, 200, r.status)
			require.Contains(t, r.obj(t)["detail"], w.admin.Email)
			l := a.do("GET", "/v1/members", w.membK, nil).list(t)
			require.Equal(t, "admin", l[0]["role"])
			require.Equal(t, "owner", l[1]["role"])

			// The new owner cannot leave; the member cannot leave their only org.
			require.Equal(t, 403, a.do("POST", "/v1/leave", w.adminK, nil).status)
			require.Equal(t, 403, a.do("POST", "/v1/leave", w.membK, nil).status)
			_, err := a.store.Orgs.CreateOrg(context.Background(), w.member.ID, "Elsewhere")
			require.NoError(t, err)
			require.Equal(t, 204, a.do("POST", "/v1/leave", w.membT+w.orgHdr(), nil).status)
			require.Equal(t, 403, a.do("POST", "/v1/leave", w.membT+w.orgHdr(), nil).status, "no longer a member: the org header is refused")
		})

		t.Run("leave after losing membership is 404", func(t *testing.T) {
			w := a.world()
			_, err := a.store.Orgs.CreateOrg(context.Background(), w.member.ID, "Other")
			require.NoError(t, err)
			// Authenticate with a cached read, then lose membership before the write.
			require.NoError(t, a.store.Orgs.RemoveMember(context.Background(), w.org.ID, w.owner.ID, w.membM.ID))
			require.Equal(t, 401, a.do("POST", "/v1/leave", w.membK, nil).status)
		})

		t.Run("api keys", func(t *testing.T) {
			w := a.world()
			require.Equal(t, 403, a.do("GET", "/v1/developer/api-keys", w.membK, nil).status)
			require.Equal(t, 403, a.do("POST", "/v1/developer/api-keys", w.membK, map[string]any{"name": "x"}).status)
			r := a.do("POST", "/v1/developer/api-keys", w.adminK, nil)
			require.Equal(t, 201, r.status, string(r.body))
			k := r.obj(t)
			require.Equal(t, "Default key", k["name"])
			raw := k["key"].(string)
			require.True(t, strings.HasPrefix(raw, "sk_live_"))
			require.Equal(t, raw[:15], k["key_prefix"])
			require.Regexp(t, `^sk_live_[0-9a-f]{7}$`, k["key_prefix"])
			require.Equal(t, true, k["is_active"])
			require.Nil(t, k["revoked_at"])
			require.Equal(t, 400, a.do("POST", "/v1/developer/api-keys", w.adminK, map[string]any{"name": ""}).status)
			require.Equal(t, 400, a.do("POST", "/v1/developer/api-keys", w.adminK, map[string]any{"name": strings.Repeat("n", 121)}).status)
			require.Equal(t, 400, a.do("POST", "/v1/developer/api-keys", w.adminK, "[1,2]").status)

			require.Equal(t, 200, a.do("GET", "/v1/members", "Bearer "+raw, nil).status)
			l := a.do("GET", "/v1/developer/api-keys", w.ownerK, nil).list(t)
			require.Equal(t, k["id"], l[0]["id"], "newest first")
			for _, e := range l {
				require.NotContains(t, e, "key")
			}
			require.Equal(t, 404, a.do("DELETE", "/v1/developer/api-keys/"+storage.NewUUID(), w.adminK, nil).status)
			require.Equal(t, 204, a.do("DELETE", "/v1/developer/api-keys/"+k["id"].(string), w.adminK, nil).status)
			require.Equal(t, 401, a.do("GET", "/v1/members", "Bearer "+raw, nil).status, "revoked key")
			l = a.do("GET", "/v1/developer/api-keys", w.ownerK, nil).list(t)
			require.Equal(t, false, l[0]["is_active"])
			require.NotNil(t, l[0]["revoked_at"])
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

		t.Run("concurrent key creation", func(t *testing.T) {
			w := a.world()
			const n = 16
			var wg sync.WaitGroup
			statuses := make([]int, n)
			keys := make([]string, n)
			for i := range n {
				wg.Go(func() {
					r := a.do("POST", "/v1/developer/api-keys", w.adminK, map[string]any{"name": fmt.Sprint("k", i)})
					statuses[i] = r.status
					if r.status == 201 {
						keys[i] = r.obj(t)["key"].(string)
					}
				})
			}
			wg.Wait()
			seen := map[string]bool{}
			for i := range n {
				require.Equal(t, 201, statuses[i])
				require.False(t, seen[keys[i]])
				seen[keys[i]] = true
				require.Equal(t, 200, a.do("GET", "/v1/members", "Bearer "+keys[i], nil).status)
			}
			require.Len(t, a.do("GET", "/v1/developer/api-keys", w.ownerK, nil).list(t), n+3)
		})

		t.Run("ownership transfer races a role change", func(t *testing.T) {
			for round := range 8 {
				w := a.world()
				var wg sync.WaitGroup
				var tr, rc resp
				wg.Go(func() {
					tr = a.do("POST", fmt.Sprintf("/v1/members/%d/transfer-ownership", w.adminM.ID), w.ownerK, nil)
				})
				wg.Go(func() {
					rc = a.do("PATCH", fmt.Sprintf("/v1/members/%d/role", w.adminM.ID), w.ownerK, map[string]any{"role": "member"})
				})
				wg.Wait()
				require.Equal(t, 200, tr.status, "round %d: %s", round, tr.body)
				require.Contains(t, []int{200, 400, 401, 403}, rc.status, "round %d: %s", round, rc.body)
				l := a.do("GET", "/v1/members", w.membK, nil).list(t)
				owners := 0
				for _, m := range l {
					if m["role"] == "owner" {
						owners++
						require.Equal(t, float64(w.adminM.ID), m["id"])
					}
				}
				require.Equal(t, 1, owners, "round %d", round)
			}
		})

		t.Run("webhook", func(t *testing.T) {
			w := a.world()
			require.Equal(t, 404, a.do("GET", "/v1/webhook", w.ownerK, nil).status)
			require.Equal(t, 403, a.do("PUT", "/v1/webhook", w.membK, map[string]any{"url": "https://x.example/h"}).status)
			r := a.do("PUT", "/v1/webhook", w.adminK, map[string]any{"url": "http://x.example/h"})
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t), "url")
			require.Equal(t, 400, a.do("PUT", "/v1/webhook", w.adminK, map[string]any{"url": "not a url"}).status)
			require.Equal(t, 400, a.do("PUT", "/v1/webhook", w.adminK, map[string]any{}).status)
			r = a.do("PUT", "/v1/webhook", w.adminK, map[string]any{"url": "http://localhost:9000/h"})
			require.Equal(t, 200, r.status, string(r.body))
			s1 := r.obj(t)["secret"]
			r = a.do("PATCH", "/v1/webhook", w.adminK, map[string]any{"url": "https://y.example/h"})
			require.Equal(t, 200, r.status)
			require.Equal(t, s1, r.obj(t)["secret"], "PATCH keeps the secret")
			r = a.do("PUT", "/v1/webhook", w.adminK, map[string]any{"url": "https://y.example/h"})
			require.NotEqual(t, s1, r.obj(t)["secret"], "PUT rotates it")
			g := a.do("GET", "/v1/webhook", w.ownerK, nil).obj(t)
			require.Equal(t, "https://y.example/h", g["url"])
			require.Equal(t, 403, a.do("GET", "/v1/webhook", w.membK, nil).status)
		})

		t.Run("invites", func(t *testing.T) {
			w := a.world()
			require.Equal(t, 403, a.do("POST", "/v1/invites", w.membK, map[string]any{"email": "a@b.example"}).status)
			require.Equal(t, 403, a.do("POST", "/v1/invites", w.adminK, map[string]any{"email": "a@b.example", "role": "admin"}).status)
			require.Equal(t, 400, a.do("POST", "/v1/invites", w.adminK, map[string]any{"email": "nope"}).status)
			require.Equal(t, 400, a.do("POST", "/v1/invites", w.adminK, map[string]any{"email": "a@b.example", "role": "owner"}).status)
			require.Equal(t, 400, a.do("POST", "/v1/invites", w.adminK, map[string]any{"email": w.member.Email}).status, "already a member")
			email := "invitee-" + storage.NewUUID()[28:] + "@example.com"
			r := a.do("POST", "/v1/invites", w.ownerK, map[string]any{"email": email, "role": "admin"})
			require.Equal(t, 201, r.status, string(r.body))
			inv := r.obj(t)
			tok := inv["token"].(string)
			require.Equal(t, "pending", inv["status"])
			require.Equal(t, "https://voice.example/v1/invitations/"+tok, inv["invite_url"])
			l := a.do("GET", "/v1/invites", w.adminK, nil).list(t)
			require.Len(t, l, 1)
			require.NotContains(t, l[0], "token")

			ctx := context.Background()
			u, err := a.store.Orgs.CreateUser(ctx, email, "In", "Vitee")
			require.NoError(t, err)
			_, err = a.store.Orgs.CreateOrg(ctx, u.ID, "Mine")
			require.NoError(t, err)
			pt, err := a.store.Keys.CreatePersonalToken(ctx, u.ID, "t")
			require.NoError(t, err)
			ut := "Token " + pt
			r = a.do("GET", "/v1/invitations/"+tok, ut, nil)
			require.Equal(t, 200, r.status)
			require.Equal(t, w.org.Name, r.obj(t)["org_name"])
			require.Equal(t, 403, a.do("POST", "/v1/invitations/"+tok+"/accept", w.membT, nil).status, "another address")
			r = a.do("POST", "/v1/invitations/"+tok+"/accept", ut, nil)
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, "admin", r.obj(t)["role"])
			require.Equal(t, 410, a.do("POST", "/v1/invitations/"+tok+"/accept", ut, nil).status, "used")
			// Fourth invite access request within the hour.
			r = a.do("GET", "/v1/invitations/"+tok, ut, nil)
			require.Equal(t, 429, r.status)
			require.Empty(t, r.header.Get("Retry-After"))
			require.Contains(t, r.obj(t), "detail")

			// A second invite for someone who joined meanwhile: 409 on accept.
			email2 := "twice-" + storage.NewUUID()[28:] + "@example.com"
			r1 := a.do("POST", "/v1/invites", w.ownerK, map[string]any{"email": email2}).obj(t)
			r2 := a.do("POST", "/v1/invites", w.ownerK, map[string]any{"email": email2}).obj(t)
			u2, err := a.store.Orgs.CreateUser(ctx, email2, "", "")
			require.NoError(t, err)
			pt2, err := a.store.Keys.CreatePersonalToken(ctx, u2.ID, "t")
			require.NoError(t, err)
			require.Equal(t, 200, a.do("POST", "/v1/invitations/"+r1["token"].(string)+"/accept", "Token "+pt2, nil).status)
			r = a.do("POST", "/v1/invitations/"+r2["token"].(string)+"/accept", "Token "+pt2, nil)
			require.Equal(t, 409, r.status, string(r.body))

			r = a.do("POST", "/v1/invites", w.ownerK, map[string]any{"email": "later@example.com"})
			id := r.obj(t)["id"].(string)
			require.Equal(t, 204, a.do("DELETE", "/v1/invites/"+id, w.adminK, nil).status)
			require.Equal(t, 410, a.do("DELETE", "/v1/invites/"+id, w.adminK, nil).status)
			require.Equal(t, 404, a.do("DELETE", "/v1/invites/"+storage.NewUUID(), w.adminK, nil).status)
			require.Equal(t, 404, a.do("GET", "/v1/invitations/inv_unknown", w.ownerT, nil).status)
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
		})
	})
}
