package control_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestPhoneNumbers(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newResAPI(t, db, testPool)
		ctx := context.Background()

		t.Run("demo pool: filters, provisioning, exhaustion and return", func(t *testing.T) {
			w := a.world()
			for _, body := range []map[string]any{{"area_code": "41"}, {"area_code": "abc"}, {"state": "Cal"}, {"city": strings.Repeat("c", 101)}, {"label": strings.Repeat("l", 101)}, {"source": "carrier"}, {"area_code": 415}} {
				r := a.do("POST", "/v1/phone-numbers", w.membK, body)
				require.Equal(t, 400, r.status, "%v: %s", body, r.body)
			}
			r := a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"area_code": "212"})
			require.Equal(t, 201, r.status, string(r.body))
			ny := r.obj(t)
			require.Equal(t, "+12125550100", ny["number"])
			require.Equal(t, "demo", ny["source"])
			require.Equal(t, "provisioning", ny["status"])
			require.Equal(t, "unverified", ny["voip_verification_status"])
			require.Nil(t, ny["voip_connection_id"])
			require.Nil(t, ny["outbound_agent_id"])
			r = a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"city": "san francisco", "state": "ca", "label": "Main line"})
			require.Equal(t, 201, r.status, string(r.body))
			sf := r.obj(t)
			require.Equal(t, "+14155550100", sf["number"])
			require.Equal(t, "Main line", sf["label"])

			// No NY number left; the filter is named in the detail.
			r = a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"area_code": "212"})
			require.Equal(t, 409, r.status)
			require.Contains(t, r.obj(t)["detail"], "area code 212")
			r = a.do("POST", "/v1/phone-numbers", w.membK, nil)
			require.Equal(t, 201, r.status, "an empty body takes any free number")
			last := r.obj(t)
			require.Equal(t, "+14155550101", last["number"])
			r = a.do("POST", "/v1/phone-numbers", a.world().membK, map[string]any{})
			require.Equal(t, 409, r.status, "the pool is shared by every organization")
			require.Contains(t, r.obj(t)["detail"], "all of the pool's numbers are in use")

			// The provisioning pass activates them, as system versions.
			n, err := a.srv.ProvisionNumbers(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, n)
			again, err := a.srv.ProvisionNumbers(ctx)
			require.NoError(t, err)
			require.Zero(t, again)
			np := fmt.Sprintf("/v1/phone-numbers/%d", id(ny))
			require.Equal(t, "active", a.do("GET", np, w.membK, nil).obj(t)["status"])
			vl := a.do("GET", np+"/versions", w.membK, nil).obj(t)
			require.Equal(t, float64(2), vl["count"])
			v2 := vl["results"].([]any)[0].(map[string]any)
			require.Equal(t, float64(2), v2["revision"])
			require.Nil(t, v2["created_by_id"], "system change")
			require.Equal(t, []any{"status"}, v2["changed_fields"])
			require.Equal(t, "active", v2["snapshot"].(map[string]any)["status"])
			v1 := vl["results"].([]any)[1].(map[string]any)
			require.Equal(t, float64(w.membM.ID), v1["created_by_id"])
			require.Equal(t, "provisioning", v1["snapshot"].(map[string]any)["status"])
			require.Contains(t, v1["changed_fields"], "number")

			l := a.do("GET", "/v1/phone-numbers", w.membK, nil).list(t)
			require.Len(t, l, 3)
			require.Equal(t, id(last), id(l[0]), "created_at descending")

			// Deleting returns the number to the pool.
			require.Equal(t, 204, a.do("DELETE", np, w.membK, nil).status)
			require.Equal(t, 404, a.do("GET", np, w.membK, nil).status)
			require.Equal(t, 404, a.do("DELETE", np, w.membK, nil).status)
			other := a.world()
			r = a.do("POST", "/v1/phone-numbers", other.membK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.status)
			require.Equal(t, "+12125550100", r.obj(t)["number"])
			require.Equal(t, 404, a.do("GET", fmt.Sprintf("/v1/phone-numbers/%d", id(r.obj(t))), w.membK, nil).status)
			for _, n := range []map[string]any{sf, last, r.obj(t)} {
				a.do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", id(n)), w.ownerK, nil)
				a.do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", id(n)), other.ownerK, nil)
			}
		})

		t.Run("a number removed from the pool fails to provision", func(t *testing.T) {
			w := a.world()
			r := a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.status)
			// Another server whose operator dropped that DID runs the pass.
			b := newAPIWith(t, db, control.Config{Resources: control.ResourcesConfig{DIDPool: testPool[:2]}})
			_, err := b.srv.ProvisionNumbers(ctx)
			require.NoError(t, err)
			np := fmt.Sprintf("/v1/phone-numbers/%d", id(r.obj(t)))
			require.Equal(t, "failed", a.do("GET", np, w.membK, nil).obj(t)["status"])
			r = a.do("PATCH", np, w.membK, map[string]any{"status": "active"})
			require.Equal(t, 409, r.status)
			require.Contains(t, r.obj(t)["detail"], "failed")
			require.Equal(t, 204, a.do("DELETE", np, w.membK, nil).status)
		})

		t.Run("no pool configured", func(t *testing.T) {
			b := newAPI(t, db)
			w := b.world()
			r := b.do("POST", "/v1/phone-numbers", w.membK, nil)
			require.Equal(t, 409, r.status)
			require.Contains(t, r.obj(t)["detail"], "--did-pool")
		})

		t.Run("concurrent requests for the last number", func(t *testing.T) {
			w1, w2 := a.world(), a.world()
			// Hold all but one DID.
			for range 2 {
				require.Equal(t, 201, a.do("POST", "/v1/phone-numbers", w1.ownerK, map[string]any{"state": "CA"}).status)
			}
			var wg sync.WaitGroup
			var r1, r2 resp
			wg.Go(func() { r1 = a.do("POST", "/v1/phone-numbers", w1.membK, nil) })
			wg.Go(func() { r2 = a.do("POST", "/v1/phone-numbers", w2.membK, nil) })
			wg.Wait()
			require.ElementsMatch(t, []int{201, 409}, []int{r1.status, r2.status}, "%s / %s", r1.body, r2.body)
			for _, w := range []world{w1, w2} {
				for _, n := range a.do("GET", "/v1/phone-numbers", w.ownerK, nil).list(t) {
					require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", id(n)), w.ownerK, nil).status)
				}
			}
		})

		t.Run("assignments, status and labels", func(t *testing.T) {
			w, other := a.world(), a.world()
			ag := a.agent(w.ownerK, "Reception", nil)
			foreign := a.agent(other.ownerK, "Elsewhere", nil)
			r := a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"state": "CA"})
			require.Equal(t, 201, r.status)
			np := fmt.Sprintf("/v1/phone-numbers/%d", id(r.obj(t)))
			// Provisioning numbers take assignments but not a status change.
			r = a.do("PATCH", np, w.membK, map[string]any{"status": "released"})
			require.Equal(t, 409, r.status)
			require.Contains(t, r.obj(t)["detail"], "provisioning")
			_, err := a.srv.ProvisionNumbers(ctx)
			require.NoError(t, err)

			for _, tc := range []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"outbound_agent_id": id(ag)}, "outbound_agent_id"},
				{map[string]any{"inbound_agent_id": id(foreign)}, "inbound_agent_id"},
				{map[string]any{"inbound_agent_id": 999999999}, "inbound_agent_id"},
				{map[string]any{"inbound_agent_id": "one"}, "inbound_agent_id"},
				{map[string]any{"status": "failed"}, "status"},
				{map[string]any{"status": "provisioning"}, "status"},
				{map[string]any{"label": strings.Repeat("x", 101)}, "label"},
				{map[string]any{"label": 7}, "label"},
			} {
				r := a.do("PATCH", np, w.membK, tc.body)
				require.Equal(t, 400, r.status, "%v: %s", tc.body, r.body)
				require.Contains(t, r.obj(t), tc.field, "%v", tc.body)
			}
			r = a.do("PUT", np, w.membK, map[string]any{"inbound_agent_id": id(ag), "label": "Reception line"})
			require.Equal(t, 200, r.status, string(r.body))
			got := r.obj(t)
			require.Equal(t, float64(id(ag)), got["inbound_agent_id"])
			require.Equal(t, "Reception line", got["label"])
			// Null clears; absent fields stay.
			r = a.do("PATCH", np, w.membK, map[string]any{"inbound_agent_id": nil})
			require.Nil(t, r.obj(t)["inbound_agent_id"])
			require.Equal(t, "Reception line", r.obj(t)["label"])
			require.Equal(t, 200, a.do("PATCH", np, w.membK, map[string]any{"inbound_agent_id": id(ag)}).status)

			// Release clears both assignments; a released number takes none.
			r = a.do("PATCH", np, w.membK, map[string]any{"status": "released"})
			require.Equal(t, 200, r.status)
			got = r.obj(t)
			require.Equal(t, "released", got["status"])
			require.Nil(t, got["inbound_agent_id"])
			v := a.do("GET", np+"/versions?limit=1", w.membK, nil).obj(t)["results"].([]any)[0].(map[string]any)
			require.Equal(t, []any{"status", "inbound_agent_id"}, v["changed_fields"])
			require.Equal(t, 409, a.do("PATCH", np, w.membK, map[string]any{"inbound_agent_id": id(ag)}).status)
			r = a.do("PATCH", np, w.membK, map[string]any{"status": "active", "inbound_agent_id": id(ag)})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, "active", r.obj(t)["status"])
			require.Equal(t, float64(id(ag)), r.obj(t)["inbound_agent_id"])
			require.Equal(t, 404, a.do("PATCH", np, other.membK, map[string]any{"label": "mine"}).status)
			require.Equal(t, 404, a.do("GET", np+"/versions", other.membK, nil).status)
			require.Equal(t, 204, a.do("DELETE", np, w.membK, nil).status)
		})

		t.Run("transfer between organizations", func(t *testing.T) {
			w := a.world()
			// The owner of w also owns a second org, where w's admin is only a member.
			target, err := a.store.Orgs.CreateOrg(ctx, w.owner.ID, "Target "+storage.NewUUID()[30:])
			require.NoError(t, err)
			_, err = a.store.Orgs.AddMember(ctx, target.ID, w.admin.ID, storage.RoleMember)
			require.NoError(t, err)
			ownerInTarget, err := a.store.Orgs.MemberByUser(ctx, target.ID, w.owner.ID)
			require.NoError(t, err)
			ag := a.agent(w.ownerK, "Before", nil)
			r := a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.status)
			np := fmt.Sprintf("/v1/phone-numbers/%d", id(r.obj(t)))
			require.Equal(t, 200, a.do("PATCH", np, w.membK, map[string]any{"inbound_agent_id": id(ag)}).status)

			tr := np + "/transfer"
			body := map[string]any{"target_org_id": target.ID}
			require.Equal(t, 403, a.do("POST", tr, w.membK, body).status, "member in the source")
			r = a.do("POST", tr, w.adminK, body)
			require.Equal(t, 403, r.status, "admin in the source, member in the target")
			require.Contains(t, r.obj(t)["detail"], "both")
			require.Equal(t, 403, a.do("POST", tr, w.ownerK, map[string]any{"target_org_id": 999999999}).status)
			require.Equal(t, 400, a.do("POST", tr, w.ownerK, map[string]any{"target_org_id": w.org.ID}).status)
			require.Equal(t, 400, a.do("POST", tr, w.ownerK, map[string]any{}).status)
			require.Equal(t, 404, a.do("POST", "/v1/phone-numbers/999999999/transfer", w.ownerK, body).status)

			r = a.do("POST", tr, w.ownerK, body)
			require.Equal(t, 200, r.status, string(r.body))
			res := r.obj(t)
			require.Equal(t, float64(w.org.ID), res["source_org_id"])
			require.Equal(t, float64(target.ID), res["target_org_id"])
			require.Equal(t, true, res["cleared_agent_assignments"])
			moved := res["phone_number"].(map[string]any)
			require.Nil(t, moved["inbound_agent_id"])
			require.Equal(t, 404, a.do("GET", np, w.ownerK, nil).status)
			tt := w.ownerT + fmt.Sprint("|", target.ID)
			require.Equal(t, 200, a.do("GET", np, tt, nil).status)
			vl := a.do("GET", np+"/versions", tt, nil).obj(t)
			require.Equal(t, float64(1), vl["count"], "the source org's history stays behind")
			v := vl["results"].([]any)[0].(map[string]any)
			require.Equal(t, float64(ownerInTarget.ID), v["created_by_id"])
			require.Contains(t, v["changed_fields"], "inbound_agent_id")
			require.Nil(t, v["snapshot"].(map[string]any)["inbound_agent_id"])
			// Nothing to clear the second time.
			r = a.do("POST", tr, tt, map[string]any{"target_org_id": w.org.ID})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, false, r.obj(t)["cleared_agent_assignments"])
			require.Equal(t, 204, a.do("DELETE", np, w.ownerK, nil).status)

			// VoIP numbers stay with their trunk.
			_, num := a.trunk(w, "+13105550123")
			r = a.do("POST", fmt.Sprintf("/v1/phone-numbers/%d/transfer", id(num)), w.ownerK, body)
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t)["detail"], "VoIP")
		})

		t.Run("labels", func(t *testing.T) {
			w, other := a.world(), a.world()
			for _, body := range []map[string]any{{"phone_number": "555-0100", "label": "x"}, {"label": "x"}, {"phone_number": "+14155550100"}, {"phone_number": "+14155550100", "label": ""}, {"phone_number": "+14155550100", "label": strings.Repeat("l", 101)}} {
				r := a.do("POST", "/v1/phone-number-labels", w.membK, body)
				require.Equal(t, 400, r.status, "%v: %s", body, r.body)
			}
			r := a.do("POST", "/v1/phone-number-labels", w.membK, map[string]any{"phone_number": "+442071234567", "label": "London office"})
			require.Equal(t, 200, r.status)
			first := r.obj(t)
			r = a.do("POST", "/v1/phone-number-labels", w.membK, map[string]any{"phone_number": "+14155550100", "label": "Mom"})
			require.Equal(t, 200, r.status)
			r = a.do("POST", "/v1/phone-number-labels", w.membK, map[string]any{"phone_number": "+442071234567", "label": "London HQ"})
			require.Equal(t, 200, r.status)
			upd := r.obj(t)
			require.Equal(t, first["id"], upd["id"], "upsert by E.164")
			require.Equal(t, first["created_at"], upd["created_at"])
			require.Equal(t, "London HQ", upd["label"])
			l := a.do("GET", "/v1/phone-number-labels", w.membK, nil).list(t)
			require.Len(t, l, 2)
			require.Equal(t, "+14155550100", l[0]["phone_number"], "sorted by phone number")
			require.Empty(t, a.do("GET", "/v1/phone-number-labels", other.membK, nil).list(t))
			lp := fmt.Sprintf("/v1/phone-number-labels/%d", id(upd))
			require.Equal(t, 404, a.do("DELETE", lp, other.membK, nil).status)
			require.Equal(t, 204, a.do("DELETE", lp, w.membK, nil).status)
			require.Equal(t, 404, a.do("DELETE", lp, w.membK, nil).status)
		})
	})
}
