package numbers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestPhoneNumbers(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		ctx := context.Background()

		t.Run("demo pool: filters, provisioning, exhaustion and return", func(t *testing.T) {
			w := a.World()
			for _, body := range []map[string]any{{"area_code": "41"}, {"area_code": "abc"}, {"state": "Cal"}, {"city": strings.Repeat("c", 101)}, {"label": strings.Repeat("l", 101)}, {"source": "carrier"}, {"area_code": 415}} {
				r := a.Do("POST", "/v1/phone-numbers", w.MembK, body)
				require.Equal(t, 400, r.Status, "%v: %s", body, r.Body)
			}
			r := a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"area_code": "212"})
			require.Equal(t, 201, r.Status, string(r.Body))
			ny := r.Obj(t)
			require.Equal(t, "+12125550100", ny["number"])
			require.Equal(t, "demo", ny["source"])
			require.Equal(t, "provisioning", ny["status"])
			require.Equal(t, "unverified", ny["voip_verification_status"])
			require.Nil(t, ny["voip_connection_id"])
			require.Nil(t, ny["outbound_agent_id"])
			r = a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"city": "san francisco", "state": "ca", "label": "Main line"})
			require.Equal(t, 201, r.Status, string(r.Body))
			sf := r.Obj(t)
			require.Equal(t, "+14155550100", sf["number"])
			require.Equal(t, "Main line", sf["label"])

			// No NY number left; the filter is named in the detail.
			r = a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"area_code": "212"})
			require.Equal(t, 409, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "area code 212")
			r = a.Do("POST", "/v1/phone-numbers", w.MembK, nil)
			require.Equal(t, 201, r.Status, "an empty body takes any free number")
			last := r.Obj(t)
			require.Equal(t, "+14155550101", last["number"])
			r = a.Do("POST", "/v1/phone-numbers", a.World().MembK, map[string]any{})
			require.Equal(t, 409, r.Status, "the pool is shared by every organization")
			require.Contains(t, r.Obj(t)["detail"], "all of the pool's numbers are in use")

			// The provisioning pass activates them, as system versions.
			n, err := a.Srv.Numbers().Provision(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, n)
			again, err := a.Srv.Numbers().Provision(ctx)
			require.NoError(t, err)
			require.Zero(t, again)
			np := fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(ny))
			require.Equal(t, "active", a.Do("GET", np, w.MembK, nil).Obj(t)["status"])
			vl := a.Do("GET", np+"/versions", w.MembK, nil).Obj(t)
			require.Equal(t, float64(2), vl["count"])
			v2 := vl["results"].([]any)[0].(map[string]any)
			require.Equal(t, float64(2), v2["revision"])
			require.Nil(t, v2["created_by_id"], "system change")
			require.Equal(t, []any{"status"}, v2["changed_fields"])
			require.Equal(t, "active", v2["snapshot"].(map[string]any)["status"])
			v1 := vl["results"].([]any)[1].(map[string]any)
			require.Equal(t, float64(w.MembM.ID), v1["created_by_id"])
			require.Equal(t, "provisioning", v1["snapshot"].(map[string]any)["status"])
			require.Contains(t, v1["changed_fields"], "number")

			l := a.Do("GET", "/v1/phone-numbers", w.MembK, nil).List(t)
			require.Len(t, l, 3)
			require.Equal(t, controltest.ID(last), controltest.ID(l[0]), "created_at descending")

			// Deleting returns the number to the pool.
			require.Equal(t, 204, a.Do("DELETE", np, w.MembK, nil).Status)
			require.Equal(t, 404, a.Do("GET", np, w.MembK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", np, w.MembK, nil).Status)
			other := a.World()
			r = a.Do("POST", "/v1/phone-numbers", other.MembK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.Status)
			require.Equal(t, "+12125550100", r.Obj(t)["number"])
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(r.Obj(t))), w.MembK, nil).Status)
			for _, n := range []map[string]any{sf, last, r.Obj(t)} {
				a.Do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(n)), w.OwnerK, nil)
				a.Do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(n)), other.OwnerK, nil)
			}
		})

		t.Run("a number removed from the pool fails to provision", func(t *testing.T) {
			w := a.World()
			r := a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.Status)
			// Another server whose operator dropped that DID runs the pass.
			b := controltest.NewWith(t, db, control.Config{Resources: control.ResourcesConfig{DIDPool: controltest.Pool[:2]}})
			_, err := b.Srv.Numbers().Provision(ctx)
			require.NoError(t, err)
			np := fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(r.Obj(t)))
			require.Equal(t, "failed", a.Do("GET", np, w.MembK, nil).Obj(t)["status"])
			r = a.Do("PATCH", np, w.MembK, map[string]any{"status": "active"})
			require.Equal(t, 409, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "failed")
			require.Equal(t, 204, a.Do("DELETE", np, w.MembK, nil).Status)
		})

		t.Run("no pool configured", func(t *testing.T) {
			b := controltest.New(t, db)
			w := b.World()
			r := b.Do("POST", "/v1/phone-numbers", w.MembK, nil)
			require.Equal(t, 409, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "--did-pool")
		})

		t.Run("concurrent requests for the last number", func(t *testing.T) {
			w1, w2 := a.World(), a.World()
			// Hold all but one DID.
			for range 2 {
				require.Equal(t, 201, a.Do("POST", "/v1/phone-numbers", w1.OwnerK, map[string]any{"state": "CA"}).Status)
			}
			var wg sync.WaitGroup
			var r1, r2 controltest.Resp
			wg.Go(func() { r1 = a.Do("POST", "/v1/phone-numbers", w1.MembK, nil) })
			wg.Go(func() { r2 = a.Do("POST", "/v1/phone-numbers", w2.MembK, nil) })
			wg.Wait()
			require.ElementsMatch(t, []int{201, 409}, []int{r1.Status, r2.Status}, "%s / %s", r1.Body, r2.Body)
			for _, w := range []controltest.World{w1, w2} {
				for _, n := range a.Do("GET", "/v1/phone-numbers", w.OwnerK, nil).List(t) {
					require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(n)), w.OwnerK, nil).Status)
				}
			}
		})

		t.Run("assignments, status and labels", func(t *testing.T) {
			w, other := a.World(), a.World()
			ag := a.Agent(w.OwnerK, "Reception", nil)
			foreign := a.Agent(other.OwnerK, "Elsewhere", nil)
			r := a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"state": "CA"})
			require.Equal(t, 201, r.Status)
			np := fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(r.Obj(t)))
			// Provisioning numbers take assignments but not a status change.
			r = a.Do("PATCH", np, w.MembK, map[string]any{"status": "released"})
			require.Equal(t, 409, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "provisioning")
			_, err := a.Srv.Numbers().Provision(ctx)
			require.NoError(t, err)

			for _, tc := range []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"outbound_agent_id": controltest.ID(ag)}, "outbound_agent_id"},
				{map[string]any{"inbound_agent_id": controltest.ID(foreign)}, "inbound_agent_id"},
				{map[string]any{"inbound_agent_id": 999999999}, "inbound_agent_id"},
				{map[string]any{"inbound_agent_id": "one"}, "inbound_agent_id"},
				{map[string]any{"status": "failed"}, "status"},
				{map[string]any{"status": "provisioning"}, "status"},
				{map[string]any{"label": strings.Repeat("x", 101)}, "label"},
				{map[string]any{"label": 7}, "label"},
			} {
				r := a.Do("PATCH", np, w.MembK, tc.body)
				require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
				require.Contains(t, r.Obj(t), tc.field, "%v", tc.body)
			}
			r = a.Do("PUT", np, w.MembK, map[string]any{"inbound_agent_id": controltest.ID(ag), "label": "Reception line"})
			require.Equal(t, 200, r.Status, string(r.Body))
			got := r.Obj(t)
			require.Equal(t, float64(controltest.ID(ag)), got["inbound_agent_id"])
			require.Equal(t, "Reception line", got["label"])
			// Null clears; absent fields stay.
			r = a.Do("PATCH", np, w.MembK, map[string]any{"inbound_agent_id": nil})
			require.Nil(t, r.Obj(t)["inbound_agent_id"])
			require.Equal(t, "Reception line", r.Obj(t)["label"])
			require.Equal(t, 200, a.Do("PATCH", np, w.MembK, map[string]any{"inbound_agent_id": controltest.ID(ag)}).Status)

			// Release clears both assignments; a released number takes none.
			r = a.Do("PATCH", np, w.MembK, map[string]any{"status": "released"})
			require.Equal(t, 200, r.Status)
			got = r.Obj(t)
			require.Equal(t, "released", got["status"])
			require.Nil(t, got["inbound_agent_id"])
			v := a.Do("GET", np+"/versions?limit=1", w.MembK, nil).Obj(t)["results"].([]any)[0].(map[string]any)
			require.Equal(t, []any{"status", "inbound_agent_id"}, v["changed_fields"])
			require.Equal(t, 409, a.Do("PATCH", np, w.MembK, map[string]any{"inbound_agent_id": controltest.ID(ag)}).Status)
			r = a.Do("PATCH", np, w.MembK, map[string]any{"status": "active", "inbound_agent_id": controltest.ID(ag)})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "active", r.Obj(t)["status"])
			require.Equal(t, float64(controltest.ID(ag)), r.Obj(t)["inbound_agent_id"])
			require.Equal(t, 404, a.Do("PATCH", np, other.MembK, map[string]any{"label": "mine"}).Status)
			require.Equal(t, 404, a.Do("GET", np+"/versions", other.MembK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", np, w.MembK, nil).Status)
		})

		t.Run("transfer between organizations", func(t *testing.T) {
			w := a.World()
			// The owner of w also owns a second org, where w's admin is only a member.
			target, err := a.Store.Orgs.CreateOrg(ctx, w.Owner.ID, "Target "+storage.NewUUID()[30:])
			require.NoError(t, err)
			_, err = a.Store.Orgs.AddMember(ctx, target.ID, w.Admin.ID, storage.RoleMember)
			require.NoError(t, err)
			ownerInTarget, err := a.Store.Orgs.MemberByUser(ctx, target.ID, w.Owner.ID)
			require.NoError(t, err)
			ag := a.Agent(w.OwnerK, "Before", nil)
			r := a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.Status)
			np := fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(r.Obj(t)))
			require.Equal(t, 200, a.Do("PATCH", np, w.MembK, map[string]any{"inbound_agent_id": controltest.ID(ag)}).Status)

			tr := np + "/transfer"
			body := map[string]any{"target_org_id": target.ID}
			require.Equal(t, 403, a.Do("POST", tr, w.MembK, body).Status, "member in the source")
			r = a.Do("POST", tr, w.AdminK, body)
			require.Equal(t, 403, r.Status, "admin in the source, member in the target")
			require.Contains(t, r.Obj(t)["detail"], "both")
			require.Equal(t, 403, a.Do("POST", tr, w.OwnerK, map[string]any{"target_org_id": 999999999}).Status)
			require.Equal(t, 400, a.Do("POST", tr, w.OwnerK, map[string]any{"target_org_id": w.Org.ID}).Status)
			require.Equal(t, 400, a.Do("POST", tr, w.OwnerK, map[string]any{}).Status)
			require.Equal(t, 404, a.Do("POST", "/v1/phone-numbers/999999999/transfer", w.OwnerK, body).Status)

			r = a.Do("POST", tr, w.OwnerK, body)
			require.Equal(t, 200, r.Status, string(r.Body))
			res := r.Obj(t)
			require.Equal(t, float64(w.Org.ID), res["source_org_id"])
			require.Equal(t, float64(target.ID), res["target_org_id"])
			require.Equal(t, true, res["cleared_agent_assignments"])
			moved := res["phone_number"].(map[string]any)
			require.Nil(t, moved["inbound_agent_id"])
			require.Equal(t, 404, a.Do("GET", np, w.OwnerK, nil).Status)
			tt := w.OwnerT + fmt.Sprint("|", target.ID)
			require.Equal(t, 200, a.Do("GET", np, tt, nil).Status)
			vl := a.Do("GET", np+"/versions", tt, nil).Obj(t)
			require.Equal(t, float64(1), vl["count"], "the source org's history stays behind")
			v := vl["results"].([]any)[0].(map[string]any)
			require.Equal(t, float64(ownerInTarget.ID), v["created_by_id"])
			require.Contains(t, v["changed_fields"], "inbound_agent_id")
			require.Nil(t, v["snapshot"].(map[string]any)["inbound_agent_id"])
			// Nothing to clear the second time.
			r = a.Do("POST", tr, tt, map[string]any{"target_org_id": w.Org.ID})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, false, r.Obj(t)["cleared_agent_assignments"])
			require.Equal(t, 204, a.Do("DELETE", np, w.OwnerK, nil).Status)

			// VoIP numbers stay with their trunk.
			_, num := a.Trunk(w, "+13105550123")
			r = a.Do("POST", fmt.Sprintf("/v1/phone-numbers/%d/transfer", controltest.ID(num)), w.OwnerK, body)
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "VoIP")
		})

		t.Run("labels", func(t *testing.T) {
			w, other := a.World(), a.World()
			for _, body := range []map[string]any{{"phone_number": "555-0100", "label": "x"}, {"label": "x"}, {"phone_number": "+14155550100"}, {"phone_number": "+14155550100", "label": ""}, {"phone_number": "+14155550100", "label": strings.Repeat("l", 101)}} {
				r := a.Do("POST", "/v1/phone-number-labels", w.MembK, body)
				require.Equal(t, 400, r.Status, "%v: %s", body, r.Body)
			}
			r := a.Do("POST", "/v1/phone-number-labels", w.MembK, map[string]any{"phone_number": "+442071234567", "label": "London office"})
			require.Equal(t, 200, r.Status)
			first := r.Obj(t)
			r = a.Do("POST", "/v1/phone-number-labels", w.MembK, map[string]any{"phone_number": "+14155550100", "label": "Mom"})
			require.Equal(t, 200, r.Status)
			r = a.Do("POST", "/v1/phone-number-labels", w.MembK, map[string]any{"phone_number": "+442071234567", "label": "London HQ"})
			require.Equal(t, 200, r.Status)
			upd := r.Obj(t)
			require.Equal(t, first["id"], upd["id"], "upsert by E.164")
			require.Equal(t, first["created_at"], upd["created_at"])
			require.Equal(t, "London HQ", upd["label"])
			l := a.Do("GET", "/v1/phone-number-labels", w.MembK, nil).List(t)
			require.Len(t, l, 2)
			require.Equal(t, "+14155550100", l[0]["phone_number"], "sorted by phone number")
			require.Empty(t, a.Do("GET", "/v1/phone-number-labels", other.MembK, nil).List(t))
			lp := fmt.Sprintf("/v1/phone-number-labels/%d", controltest.ID(upd))
			require.Equal(t, 404, a.Do("DELETE", lp, other.MembK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", lp, w.MembK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", lp, w.MembK, nil).Status)
		})
	})
}
