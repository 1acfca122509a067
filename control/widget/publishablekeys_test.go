package widget_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// pkKeys are the fields of a publishable key, spec section 2.5.
var pkKeys = []string{"id", "name", "key", "key_prefix", "allowed_domains", "is_active", "is_enabled", "mode", "agent_id",
	"agent_name", "webhook_url", "created_at", "updated_at"}

func TestPublishableKeys(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.New(t, db)

		t.Run("create, retrieve and list", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.OwnerK, "Front desk", nil)
			r := a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"Example.com", "*.shop.example"}})
			require.Equal(t, 201, r.Status, string(r.Body))
			k := r.Obj(t)
			for _, f := range pkKeys {
				require.Contains(t, k, f)
			}
			require.Len(t, k, len(pkKeys))
			require.Equal(t, "Web Widget", k["name"])
			require.Equal(t, "agent", k["mode"])
			require.Equal(t, true, k["is_active"])
			require.Equal(t, true, k["is_enabled"])
			require.Equal(t, float64(controltest.ID(ag)), k["agent_id"])
			require.Equal(t, "Front desk", k["agent_name"])
			require.Nil(t, k["webhook_url"])
			require.Equal(t, []any{"example.com", "*.shop.example"}, k["allowed_domains"])
			raw := k["key"].(string)
			require.Regexp(t, `^pk_live_[0-9a-f]{32}$`, raw)
			require.Equal(t, raw[:12], k["key_prefix"])
			require.Len(t, k["key_prefix"], 12)

			// Always retrievable: GET and the list carry the full value.
			g := a.Do("GET", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(k)), w.MembK, nil)
			require.Equal(t, 200, g.Status)
			require.Equal(t, raw, g.Obj(t)["key"])
			l := a.Do("GET", "/v1/publishable-key", w.MembK, nil).List(t)
			require.Len(t, l, 1)
			require.Equal(t, raw, l[0]["key"])

			// Publishable keys are not accepted by the API (spec 5.4).
			require.Equal(t, 401, a.Do("GET", "/v1/members", "Bearer "+raw, nil).Status)
			// Writes are admin+; other orgs see nothing.
			require.Equal(t, 403, a.Do("POST", "/v1/publishable-key", w.MembK, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"a.example"}}).Status)
			other := a.World()
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(k)), other.OwnerK, nil).Status)
			require.Empty(t, a.Do("GET", "/v1/publishable-key", other.OwnerK, nil).List(t))
			require.Equal(t, 404, a.Do("GET", "/v1/publishable-key/abc", w.OwnerK, nil).Status)

			// Two keys never share a value.
			r2 := a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"name": "Docs site", "agent_id": controltest.ID(ag), "allowed_domains": []string{"docs.example"}, "is_enabled": false})
			require.Equal(t, 201, r2.Status, string(r2.Body))
			require.NotEqual(t, raw, r2.Obj(t)["key"])
			require.Equal(t, "Docs site", r2.Obj(t)["name"])
			require.Equal(t, false, r2.Obj(t)["is_enabled"])
		})

		t.Run("mode rules", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.OwnerK, "Sales", nil)
			foreign := a.Agent(a.World().OwnerK, "Elsewhere", nil)
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
				{map[string]any{"mode": "phone", "agent_id": controltest.ID(ag), "allowed_domains": dom}, "mode"},
				{map[string]any{"agent_id": controltest.ID(foreign), "allowed_domains": dom}, "agent_id"},
				{map[string]any{"agent_id": "seven", "allowed_domains": dom}, "agent_id"},
				{map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": dom, "name": ""}, "name"},
				{map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": dom, "name": strings.Repeat("n", 121)}, "name"},
				{map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": dom, "is_enabled": "yes"}, "is_enabled"},
			}
			for _, tc := range bad {
				r := a.Do("POST", "/v1/publishable-key", w.AdminK, tc.body)
				require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
				require.Contains(t, r.Obj(t), tc.field, "%v: %s", tc.body, r.Body)
			}

			r := a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"mode": "webhook", "webhook_url": "https://hooks.example/agent", "allowed_domains": dom})
			require.Equal(t, 201, r.Status, string(r.Body))
			hook := r.Obj(t)
			require.Equal(t, "webhook", hook["mode"])
			require.Equal(t, "https://hooks.example/agent", hook["webhook_url"])
			require.Nil(t, hook["agent_id"])
			path := fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(hook))

			// Switching mode needs the new mode's field in the request.
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"mode": "agent"})
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "agent_id")
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"mode": "agent", "agent_id": controltest.ID(foreign)})
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "agent_id")
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"mode": "agent", "agent_id": controltest.ID(ag)})
			require.Equal(t, 200, r.Status, string(r.Body))
			k := r.Obj(t)
			require.Equal(t, "agent", k["mode"])
			require.Equal(t, "Sales", k["agent_name"])
			require.Nil(t, k["webhook_url"], "agent mode carries no webhook URL")
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"mode": "webhook"})
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "webhook_url")
			// The mode's own field cannot be cleared under it.
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"agent_id": nil})
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "agent_id")
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"mode": "webhook", "webhook_url": "https://hooks.example/v2"})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "https://hooks.example/v2", r.Obj(t)["webhook_url"])
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"webhook_url": nil})
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "webhook_url")

			// Any subset of the other fields.
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"name": "Renamed", "is_enabled": false, "allowed_domains": []string{"app.example"}})
			require.Equal(t, 200, r.Status, string(r.Body))
			k = r.Obj(t)
			require.Equal(t, "Renamed", k["name"])
			require.Equal(t, false, k["is_enabled"])
			require.Equal(t, []any{"app.example"}, k["allowed_domains"])
			require.Equal(t, "webhook", k["mode"])
			require.Equal(t, 403, a.Do("PATCH", path, w.MembK, map[string]any{"name": "x"}).Status)
			require.Equal(t, 404, a.Do("PATCH", "/v1/publishable-key/999999999", w.AdminK, map[string]any{"name": "x"}).Status)

			// Deleting the agent leaves the key without one.
			r = a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": dom})
			require.Equal(t, 201, r.Status)
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/agents/%d", controltest.ID(ag)), w.OwnerK, nil).Status)
			k = a.Do("GET", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(r.Obj(t))), w.OwnerK, nil).Obj(t)
			require.Nil(t, k["agent_id"])
			require.Nil(t, k["agent_name"])
		})

		t.Run("allowed domains", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.OwnerK, "Web", nil)
			mk := func(domains any) controltest.Resp {
				return a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": domains})
			}
			for _, d := range []any{nil, []string{}} {
				r := mk(d)
				require.Equal(t, 400, r.Status, string(r.Body))
				require.Equal(t, []any{"At least one domain is required."}, r.Obj(t)["allowed_domains"])
			}
			r := a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"agent_id": controltest.ID(ag)})
			require.Equal(t, 400, r.Status)
			require.Equal(t, []any{"At least one domain is required."}, r.Obj(t)["allowed_domains"])
			for _, d := range []string{"*", "*.*", " * ", "*.*.com", "*.com", "exa*mple.com", "a.*.example.com", "example.com/path", "bad_host!", "-x.example", ""} {
				r := mk([]string{"ok.example", d})
				require.Equal(t, 400, r.Status, "%q: %s", d, r.Body)
				require.Contains(t, r.Obj(t), "allowed_domains", "%q", d)
			}
			r = mk("example.com")
			require.Equal(t, 400, r.Status)
			r = mk([]string{"https://Shop.Example.com:8443/", "shop.example.com", "localhost:3000", "*.Example.org.", "10.0.0.7"})
			require.Equal(t, 201, r.Status, string(r.Body))
			require.Equal(t, []any{"shop.example.com", "localhost", "*.example.org", "10.0.0.7"}, r.Obj(t)["allowed_domains"])
			path := fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(r.Obj(t)))
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"allowed_domains": []string{}})
			require.Equal(t, 400, r.Status)
			require.Equal(t, []any{"At least one domain is required."}, r.Obj(t)["allowed_domains"])
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"allowed_domains": []string{"*"}})
			require.Equal(t, 400, r.Status)
		})

		t.Run("soft delete", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.OwnerK, "Web", nil)
			k := a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"a.example"}}).Obj(t)
			path := fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(k))
			require.Equal(t, 403, a.Do("DELETE", path, w.MembK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", path, w.AdminK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", path, w.AdminK, nil).Status, "deactivating twice is harmless")
			g := a.Do("GET", path, w.MembK, nil)
			require.Equal(t, 200, g.Status)
			require.Equal(t, false, g.Obj(t)["is_active"])
			require.Equal(t, k["key"], g.Obj(t)["key"])
			l := a.Do("GET", "/v1/publishable-key", w.MembK, nil).List(t)
			require.Len(t, l, 1, "a deactivated key stays listed")
			require.Equal(t, false, l[0]["is_active"])
			r := a.Do("PATCH", path, w.AdminK, map[string]any{"is_enabled": true})
			require.Equal(t, 409, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "detail")
			require.Equal(t, 404, a.Do("DELETE", "/v1/publishable-key/999999999", w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", path, a.World().OwnerK, nil).Status)
		})

		t.Run("transfer", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.OwnerK, "Web", nil)
			k := a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"name": "Site", "agent_id": controltest.ID(ag), "allowed_domains": []string{"a.example"}}).Obj(t)
			path := fmt.Sprintf("/v1/publishable-key/%d/transfer", controltest.ID(k))
			// A second org where the admin is only a member, and one where they are admin.
			ctx := context.Background()
			low, err := a.Store.Orgs.CreateOrg(ctx, w.Owner.ID, "Low")
			require.NoError(t, err)
			_, err = a.Store.Orgs.AddMember(ctx, low.ID, w.Admin.ID, storage.RoleMember)
			require.NoError(t, err)
			high, err := a.Store.Orgs.CreateOrg(ctx, w.Owner.ID, "High")
			require.NoError(t, err)
			_, err = a.Store.Orgs.AddMember(ctx, high.ID, w.Admin.ID, storage.RoleAdmin)
			require.NoError(t, err)

			ownerHigh := fmt.Sprint(w.OwnerT, "|", high.ID)
			highAgent := controltest.ID(a.Agent(ownerHigh, "High desk", nil))
			for _, body := range []map[string]any{{}, {"target_org_id": high.ID}, {"target_org_id": high.ID, "mode": "clone"}, {"mode": "copy"},
				{"target_org_id": w.Org.ID, "mode": "copy", "agent_id": highAgent}, {"target_org_id": high.ID, "mode": "copy", "name": "", "agent_id": highAgent}} {
				r := a.Do("POST", path, w.AdminK, body)
				require.Equal(t, 400, r.Status, "%v: %s", body, r.Body)
			}
			require.Equal(t, 403, a.Do("POST", path, w.MembK, map[string]any{"target_org_id": high.ID, "mode": "copy"}).Status)
			r := a.Do("POST", path, w.AdminK, map[string]any{"target_org_id": low.ID, "mode": "copy"})
			require.Equal(t, 403, r.Status, "member of the target: %s", r.Body)
			r = a.Do("POST", path, w.AdminK, map[string]any{"target_org_id": 999999999, "mode": "copy"})
			require.Equal(t, 403, r.Status, "not a member of the target: %s", r.Body)
			// A key in agent mode needs an agent of the target (spec 2.5:
			// agent_id is required in agent mode); another org's is refused.
			for _, body := range []map[string]any{{"target_org_id": high.ID, "mode": "copy"}, {"target_org_id": high.ID, "mode": "move", "agent_id": controltest.ID(ag)}} {
				r = a.Do("POST", path, w.AdminK, body)
				require.Equal(t, 400, r.Status, "%v: %s", body, r.Body)
				require.Contains(t, r.Obj(t), "agent_id")
			}
			require.Empty(t, a.Do("GET", "/v1/publishable-key", ownerHigh, nil).List(t), "nothing stored from a refused transfer")

			// Copy: a new key in the target; the original is untouched.
			r = a.Do("POST", path, w.AdminK, map[string]any{"target_org_id": high.ID, "mode": "copy", "name": "Copied", "agent_id": highAgent})
			require.Equal(t, 200, r.Status, string(r.Body))
			tr := r.Obj(t)
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
			require.Equal(t, 200, a.Do("GET", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(k)), w.OwnerK, nil).Status)
			require.Len(t, a.Do("GET", "/v1/publishable-key", ownerHigh, nil).List(t), 1)

			// Move: the same key (id and value) now belongs to the target.
			r = a.Do("POST", path, w.AdminK, map[string]any{"target_org_id": high.ID, "mode": "move", "agent_id": highAgent})
			require.Equal(t, 200, r.Status, string(r.Body))
			mv := r.Obj(t)["publishable_key"].(map[string]any)
			require.Equal(t, k["id"], mv["id"])
			require.Equal(t, k["key"], mv["key"])
			require.Equal(t, "Site", mv["name"])
			require.Equal(t, float64(highAgent), mv["agent_id"])
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(k)), w.OwnerK, nil).Status)
			require.Len(t, a.Do("GET", "/v1/publishable-key", ownerHigh, nil).List(t), 2)
			require.Empty(t, a.Do("GET", "/v1/publishable-key", w.OwnerK, nil).List(t))

			// A deactivated key cannot be transferred.
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(cp)), ownerHigh, nil).Status)
			r = a.Do("POST", fmt.Sprintf("/v1/publishable-key/%d/transfer", controltest.ID(cp)), ownerHigh, map[string]any{"target_org_id": w.Org.ID, "mode": "move", "agent_id": controltest.ID(ag)})
			require.Equal(t, 409, r.Status, string(r.Body))

			// A key in webhook mode may take a fallback agent of the target,
			// or none.
			hr := a.Do("POST", "/v1/publishable-key", w.AdminK, map[string]any{"name": "Hooked", "mode": "webhook", "webhook_url": "https://hooks.example/pk", "allowed_domains": []string{"b.example"}})
			require.Equal(t, 201, hr.Status, string(hr.Body))
			hook := hr.Obj(t)
			hookPath := fmt.Sprintf("/v1/publishable-key/%d/transfer", controltest.ID(hook))
			r = a.Do("POST", hookPath, w.AdminK, map[string]any{"target_org_id": high.ID, "mode": "copy", "agent_id": controltest.ID(ag)})
			require.Equal(t, 400, r.Status, "the source org's agent: %s", r.Body)
			require.Contains(t, r.Obj(t), "agent_id")
			r = a.Do("POST", hookPath, w.AdminK, map[string]any{"target_org_id": high.ID, "mode": "copy", "agent_id": highAgent})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, float64(highAgent), r.Obj(t)["publishable_key"].(map[string]any)["agent_id"])
			r = a.Do("POST", hookPath, w.AdminK, map[string]any{"target_org_id": high.ID, "mode": "copy"})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, false, r.Obj(t)["cleared_agent_assignments"])
			require.Equal(t, "webhook", r.Obj(t)["publishable_key"].(map[string]any)["mode"])
		})
	})
}
