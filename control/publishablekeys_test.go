package control_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// pkKeys are the fields of a publishable key, spec section 2.5.
var pkKeys = []string{"id", "name", "key", "key_prefix", "allowed_domains", "is_active", "is_enabled", "mode", "agent_id",
	"agent_name", "webhook_url", "created_at", "updated_at"}

func TestPublishableKeys(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)

		t.Run("create, retrieve and list", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.ownerK, "Front desk", nil)
			r := a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"agent_id": id(ag), "allowed_domains": []string{"Example.com", "*.shop.example"}})
			require.Equal(t, 201, r.status, string(r.body))
			k := r.obj(t)
			for _, f := range pkKeys {
				require.Contains(t, k, f)
			}
			require.Len(t, k, len(pkKeys))
			require.Equal(t, "Web Widget", k["name"])
			require.Equal(t, "agent", k["mode"])
			require.Equal(t, true, k["is_active"])
			require.Equal(t, true, k["is_enabled"])
			require.Equal(t, float64(id(ag)), k["agent_id"])
			require.Equal(t, "Front desk", k["agent_name"])
			require.Nil(t, k["webhook_url"])
			require.Equal(t, []any{"example.com", "*.shop.example"}, k["allowed_domains"])
			raw := k["key"].(string)
			require.Regexp(t, `^pk_live_[0-9a-f]{32}$`, raw)
			require.Equal(t, raw[:12], k["key_prefix"])
			require.Len(t, k["key_prefix"], 12)

			// Always retrievable: GET and the list carry the full value.
			g := a.do("GET", fmt.Sprintf("/v1/publishable-key/%d", id(k)), w.membK, nil)
			require.Equal(t, 200, g.status)
			require.Equal(t, raw, g.obj(t)["key"])
			l := a.do("GET", "/v1/publishable-key", w.membK, nil).list(t)
			require.Len(t, l, 1)
			require.Equal(t, raw, l[0]["key"])

			// Publishable keys are not accepted by the API (spec 5.4).
			require.Equal(t, 401, a.do("GET", "/v1/members", "Bearer "+raw, nil).status)
			// Writes are admin+; other orgs see nothing.
			require.Equal(t, 403, a.do("POST", "/v1/publishable-key", w.membK, map[string]any{"agent_id": id(ag), "allowed_domains": []string{"a.example"}}).status)
			other := a.world()
			require.Equal(t, 404, a.do("GET", fmt.Sprintf("/v1/publishable-key/%d", id(k)), other.ownerK, nil).status)
			require.Empty(t, a.do("GET", "/v1/publishable-key", other.ownerK, nil).list(t))
			require.Equal(t, 404, a.do("GET", "/v1/publishable-key/abc", w.ownerK, nil).status)

			// Two keys never share a value.
			r2 := a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"name": "Docs site", "agent_id": id(ag), "allowed_domains": []string{"docs.example"}, "is_enabled": false})
			require.Equal(t, 201, r2.status, string(r2.body))
			require.NotEqual(t, raw, r2.obj(t)["key"])
			require.Equal(t, "Docs site", r2.obj(t)["name"])
			require.Equal(t, false, r2.obj(t)["is_enabled"])
		})

		t.Run("mode rules", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.ownerK, "Sales", nil)
			foreign := a.agent(a.world().ownerK, "Elsewhere", nil)
			dom := []string{"example.com"}
			bad := []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"allowed_domains": dom}, "agent_id"},
				{map[string]any{"mode": "agent", "agent_id": nil, "allowed_domains": dom}, "agent_id"},
				{map[string]any{"mode": "webhook", "allowed_domains": dom}, "webhook_url"},
				{map[string]any{"mode": "webhook", "webhook_url": "http://hooks.example/x", "allowed_domains": dom}, "webhook_url"},
				{map[string]any{"mode": "webhook", "webhook_url": "not a url", "allowed_domains": dom}, "webhook_url"},
				{map[string]any{"mode": "phone", "agent_id": id(ag), "allowed_domains": dom}, "mode"},
				{map[string]any{"agent_id": id(foreign), "allowed_domains": dom}, "agent_id"},
				{map[string]any{"agent_id": "seven", "allowed_domains": dom}, "agent_id"},
				{map[string]any{"agent_id": id(ag), "allowed_domains": dom, "name": ""}, "name"},
				{map[string]any{"agent_id": id(ag), "allowed_domains": dom, "name": strings.Repeat("n", 121)}, "name"},
				{map[string]any{"agent_id": id(ag), "allowed_domains": dom, "is_enabled": "yes"}, "is_enabled"},
			}
			for _, tc := range bad {
				r := a.do("POST", "/v1/publishable-key", w.adminK, tc.body)
				require.Equal(t, 400, r.status, "%v: %s", tc.body, r.body)
				require.Contains(t, r.obj(t), tc.field, "%v: %s", tc.body, r.body)
			}

			r := a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"mode": "webhook", "webhook_url": "https://hooks.example/agent", "allowed_domains": dom})
			require.Equal(t, 201, r.status, string(r.body))
			hook := r.obj(t)
			require.Equal(t, "webhook", hook["mode"])
			require.Equal(t, "https://hooks.example/agent", hook["webhook_url"])
			require.Nil(t, hook["agent_id"])
			path := fmt.Sprintf("/v1/publishable-key/%d", id(hook))

			// Switching mode needs the new mode's field in the request.
			r = a.do("PATCH", path, w.adminK, map[string]any{"mode": "agent"})
			require.Equal(t, 400, r.status, string(r.body))
			require.Contains(t, r.obj(t), "agent_id")
			r = a.do("PATCH", path, w.adminK, map[string]any{"mode": "agent", "agent_id": id(foreign)})
			require.Equal(t, 400, r.status, string(r.body))
			require.Contains(t, r.obj(t), "agent_id")
			r = a.do("PATCH", path, w.adminK, map[string]any{"mode": "agent", "agent_id": id(ag)})
			require.Equal(t, 200, r.status, string(r.body))
			k := r.obj(t)
			require.Equal(t, "agent", k["mode"])
			require.Equal(t, "Sales", k["agent_name"])
			require.Nil(t, k["webhook_url"], "agent mode carries no webhook URL")
			r = a.do("PATCH", path, w.adminK, map[string]any{"mode": "webhook"})
			require.Equal(t, 400, r.status, string(r.body))
			require.Contains(t, r.obj(t), "webhook_url")
			// The mode's own field cannot be cleared under it.
			r = a.do("PATCH", path, w.adminK, map[string]any{"agent_id": nil})
			require.Equal(t, 400, r.status, string(r.body))
			require.Contains(t, r.obj(t), "agent_id")
			r = a.do("PATCH", path, w.adminK, map[string]any{"mode": "webhook", "webhook_url": "https://hooks.example/v2"})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, "https://hooks.example/v2", r.obj(t)["webhook_url"])
			r = a.do("PATCH", path, w.adminK, map[string]any{"webhook_url": nil})
			require.Equal(t, 400, r.status, string(r.body))
			require.Contains(t, r.obj(t), "webhook_url")

			// Any subset of the other fields.
			r = a.do("PATCH", path, w.adminK, map[string]any{"name": "Renamed", "is_enabled": false, "allowed_domains": []string{"app.example"}})
			require.Equal(t, 200, r.status, string(r.body))
			k = r.obj(t)
			require.Equal(t, "Renamed", k["name"])
			require.Equal(t, false, k["is_enabled"])
			require.Equal(t, []any{"app.example"}, k["allowed_domains"])
			require.Equal(t, "webhook", k["mode"])
			require.Equal(t, 403, a.do("PATCH", path, w.membK, map[string]any{"name": "x"}).status)
			require.Equal(t, 404, a.do("PATCH", "/v1/publishable-key/999999999", w.adminK, map[string]any{"name": "x"}).status)

			// Deleting the agent leaves the key without one.
			r = a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"agent_id": id(ag), "allowed_domains": dom})
			require.Equal(t, 201, r.status)
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/agents/%d", id(ag)), w.ownerK, nil).status)
			k = a.do("GET", fmt.Sprintf("/v1/publishable-key/%d", id(r.obj(t))), w.ownerK, nil).obj(t)
			require.Nil(t, k["agent_id"])
			require.Nil(t, k["agent_name"])
		})

		t.Run("allowed domains", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.ownerK, "Web", nil)
			mk := func(domains any) resp {
				return a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"agent_id": id(ag), "allowed_domains": domains})
			}
			for _, d := range []any{nil, []string{}} {
				r := mk(d)
				require.Equal(t, 400, r.status, string(r.body))
				require.Equal(t, []any{"At least one domain is required."}, r.obj(t)["allowed_domains"])
			}
			r := a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"agent_id": id(ag)})
			require.Equal(t, 400, r.status)
			require.Equal(t, []any{"At least one domain is required."}, r.obj(t)["allowed_domains"])
			for _, d := range []string{"*", "*.*", " * ", "*.*.com", "*.com", "exa*mple.com", "a.*.example.com", "example.com/path", "bad_host!", "-x.example", ""} {
				r := mk([]string{"ok.example", d})
				require.Equal(t, 400, r.status, "%q: %s", d, r.body)
				require.Contains(t, r.obj(t), "allowed_domains", "%q", d)
			}
			r = mk("example.com")
			require.Equal(t, 400, r.status)
			r = mk([]string{"https://Shop.Example.com:8443/", "shop.example.com", "localhost:3000", "*.Example.org.", "10.0.0.7"})
			require.Equal(t, 201, r.status, string(r.body))
			require.Equal(t, []any{"shop.example.com", "localhost", "*.example.org", "10.0.0.7"}, r.obj(t)["allowed_domains"])
			path := fmt.Sprintf("/v1/publishable-key/%d", id(r.obj(t)))
			r = a.do("PATCH", path, w.adminK, map[string]any{"allowed_domains": []string{}})
			require.Equal(t, 400, r.status)
			require.Equal(t, []any{"At least one domain is required."}, r.obj(t)["allowed_domains"])
			r = a.do("PATCH", path, w.adminK, map[string]any{"allowed_domains": []string{"*"}})
			require.Equal(t, 400, r.status)
		})

		t.Run("soft delete", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.ownerK, "Web", nil)
			k := a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"agent_id": id(ag), "allowed_domains": []string{"a.example"}}).obj(t)
			path := fmt.Sprintf("/v1/publishable-key/%d", id(k))
			require.Equal(t, 403, a.do("DELETE", path, w.membK, nil).status)
			require.Equal(t, 204, a.do("DELETE", path, w.adminK, nil).status)
			require.Equal(t, 204, a.do("DELETE", path, w.adminK, nil).status, "deactivating twice is harmless")
			g := a.do("GET", path, w.membK, nil)
			require.Equal(t, 200, g.status)
			require.Equal(t, false, g.obj(t)["is_active"])
			require.Equal(t, k["key"], g.obj(t)["key"])
			l := a.do("GET", "/v1/publishable-key", w.membK, nil).list(t)
			require.Len(t, l, 1, "a deactivated key stays listed")
			require.Equal(t, false, l[0]["is_active"])
			r := a.do("PATCH", path, w.adminK, map[string]any{"is_enabled": true})
			require.Equal(t, 409, r.status, string(r.body))
			require.Contains(t, r.obj(t), "detail")
			require.Equal(t, 404, a.do("DELETE", "/v1/publishable-key/999999999", w.adminK, nil).status)
			require.Equal(t, 404, a.do("DELETE", path, a.world().ownerK, nil).status)
		})

		t.Run("transfer", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.ownerK, "Web", nil)
			k := a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"name": "Site", "agent_id": id(ag), "allowed_domains": []string{"a.example"}}).obj(t)
			path := fmt.Sprintf("/v1/publishable-key/%d/transfer", id(k))
			// A second org where the admin is only a member, and one where they are admin.
			ctx := context.Background()
			low, err := a.store.CreateOrg(ctx, w.owner.ID, "Low")
			require.NoError(t, err)
			_, err = a.store.AddMember(ctx, low.ID, w.admin.ID, storage.RoleMember)
			require.NoError(t, err)
			high, err := a.store.CreateOrg(ctx, w.owner.ID, "High")
			require.NoError(t, err)
			_, err = a.store.AddMember(ctx, high.ID, w.admin.ID, storage.RoleAdmin)
			require.NoError(t, err)

			ownerHigh := fmt.Sprint(w.ownerT, "|", high.ID)
			highAgent := id(a.agent(ownerHigh, "High desk", nil))
			for _, body := range []map[string]any{{}, {"target_org_id": high.ID}, {"target_org_id": high.ID, "mode": "clone"}, {"mode": "copy"},
				{"target_org_id": w.org.ID, "mode": "copy", "agent_id": highAgent}, {"target_org_id": high.ID, "mode": "copy", "name": "", "agent_id": highAgent}} {
				r := a.do("POST", path, w.adminK, body)
				require.Equal(t, 400, r.status, "%v: %s", body, r.body)
			}
			require.Equal(t, 403, a.do("POST", path, w.membK, map[string]any{"target_org_id": high.ID, "mode": "copy"}).status)
			r := a.do("POST", path, w.adminK, map[string]any{"target_org_id": low.ID, "mode": "copy"})
			require.Equal(t, 403, r.status, "member of the target: %s", r.body)
			r = a.do("POST", path, w.adminK, map[string]any{"target_org_id": 999999999, "mode": "copy"})
			require.Equal(t, 403, r.status, "not a member of the target: %s", r.body)
			// A key in agent mode needs an agent of the target (spec 2.5:
			// agent_id is required in agent mode); another org's is refused.
			for _, body := range []map[string]any{{"target_org_id": high.ID, "mode": "copy"}, {"target_org_id": high.ID, "mode": "move", "agent_id": id(ag)}} {
				r = a.do("POST", path, w.adminK, body)
				require.Equal(t, 400, r.status, "%v: %s", body, r.body)
				require.Contains(t, r.obj(t), "agent_id")
			}
			require.Empty(t, a.do("GET", "/v1/publishable-key", ownerHigh, nil).list(t), "nothing stored from a refused transfer")

			// Copy: a new key in the target; the original is untouched.
			r = a.do("POST", path, w.adminK, map[string]any{"target_org_id": high.ID, "mode": "copy", "name": "Copied", "agent_id": highAgent})
			require.Equal(t, 200, r.status, string(r.body))
			tr := r.obj(t)
			require.Equal(t, "copy", tr["mode"])
			require.Equal(t, true, tr["cleared_agent_assignments"], "the same field name as the number transfer")
			cp := tr["publishable_key"].(map[string]any)
			require.NotEqual(t, k["id"], cp["id"])
			require.NotEqual(t, k["key"], cp["key"])
			require.Equal(t, "Copied", cp["name"])
			require.Equal(t, "agent", cp["mode"])
			require.Equal(t, float64(highAgent), cp["agent_id"])
			require.Equal(t, "High desk", cp["agent_name"])
			require.Equal(t, k["allowed_domains"], cp["allowed_domains"])
			require.Equal(t, 200, a.do("GET", fmt.Sprintf("/v1/publishable-key/%d", id(k)), w.ownerK, nil).status)
			require.Len(t, a.do("GET", "/v1/publishable-key", ownerHigh, nil).list(t), 1)

			// Move: the same key (id and value) now belongs to the target.
			r = a.do("POST", path, w.adminK, map[string]any{"target_org_id": high.ID, "mode": "move", "agent_id": highAgent})
			require.Equal(t, 200, r.status, string(r.body))
			mv := r.obj(t)["publishable_key"].(map[string]any)
			require.Equal(t, k["id"], mv["id"])
			require.Equal(t, k["key"], mv["key"])
			require.Equal(t, "Site", mv["name"])
			require.Equal(t, float64(highAgent), mv["agent_id"])
			require.Equal(t, 404, a.do("GET", fmt.Sprintf("/v1/publishable-key/%d", id(k)), w.ownerK, nil).status)
			require.Len(t, a.do("GET", "/v1/publishable-key", ownerHigh, nil).list(t), 2)
			require.Empty(t, a.do("GET", "/v1/publishable-key", w.ownerK, nil).list(t))

			// A deactivated key cannot be transferred.
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/publishable-key/%d", id(cp)), ownerHigh, nil).status)
			r = a.do("POST", fmt.Sprintf("/v1/publishable-key/%d/transfer", id(cp)), ownerHigh, map[string]any{"target_org_id": w.org.ID, "mode": "move", "agent_id": id(ag)})
			require.Equal(t, 409, r.status, string(r.body))

			// A key in webhook mode may take a fallback agent of the target,
			// or none.
			hr := a.do("POST", "/v1/publishable-key", w.adminK, map[string]any{"name": "Hooked", "mode": "webhook", "webhook_url": "https://hooks.example/pk", "allowed_domains": []string{"b.example"}})
			require.Equal(t, 201, hr.status, string(hr.body))
			hook := hr.obj(t)
			hookPath := fmt.Sprintf("/v1/publishable-key/%d/transfer", id(hook))
			r = a.do("POST", hookPath, w.adminK, map[string]any{"target_org_id": high.ID, "mode": "copy", "agent_id": id(ag)})
			require.Equal(t, 400, r.status, "the source org's agent: %s", r.body)
			require.Contains(t, r.obj(t), "agent_id")
			r = a.do("POST", hookPath, w.adminK, map[string]any{"target_org_id": high.ID, "mode": "copy", "agent_id": highAgent})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, float64(highAgent), r.obj(t)["publishable_key"].(map[string]any)["agent_id"])
			r = a.do("POST", hookPath, w.adminK, map[string]any{"target_org_id": high.ID, "mode": "copy"})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, false, r.obj(t)["cleared_agent_assignments"])
			require.Equal(t, "webhook", r.obj(t)["publishable_key"].(map[string]any)["mode"])
		})
	})
}
