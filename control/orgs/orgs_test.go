package orgs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestOrgsAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.New(t, db)

		t.Run("orgs", func(t *testing.T) {
			w := a.World()
			r := a.Do("GET", "/v1/orgs/", w.OwnerK, nil)
			require.Equal(t, 200, r.Status)
			l := r.List(t)
			require.Len(t, l, 1)
			require.Equal(t, float64(w.Org.ID), l[0]["id"])
			require.Equal(t, "owner", l[0]["role"])
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, l[0]["created_at"])

			r = a.Do("POST", "/v1/orgs/", w.MembT, map[string]any{"name": "  Side project "})
			require.Equal(t, 201, r.Status, string(r.Body))
			side := r.Obj(t)
			require.Equal(t, "Side project", side["name"])
			require.Equal(t, "owner", side["role"])
			sideID := int64(side["id"].(float64))
			r = a.Do("GET", "/v1/orgs/", w.MembT, nil)
			require.Len(t, r.List(t), 2)

			require.Equal(t, 400, a.Do("POST", "/v1/orgs/", w.MembT, map[string]any{"name": ""}).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/orgs/", w.MembT, map[string]any{"name": strings.Repeat("x", 121)}).Status)
			r = a.Do("POST", "/v1/orgs/", w.MembT, map[string]any{})
			require.Equal(t, 400, r.Status)
			require.Equal(t, []any{"This field is required."}, r.Obj(t)["name"])
			require.Equal(t, 400, a.Do("POST", "/v1/orgs/", w.MembT, map[string]any{"name": 12}).Status)

			require.Equal(t, 200, a.Do("GET", fmt.Sprintf("/v1/orgs/%d/", w.Org.ID), w.MembT, nil).Status)
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/orgs/%d/", sideID), w.OwnerT, nil).Status)
			require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/orgs/%d/", sideID), w.MembK, nil).Status, "keys see only their org")
			require.Equal(t, 404, a.Do("GET", "/v1/orgs/abc/", w.MembT, nil).Status)

			require.Equal(t, 403, a.Do("PATCH", fmt.Sprintf("/v1/orgs/%d/", w.Org.ID), w.MembT, map[string]any{"name": "X"}).Status)
			r = a.Do("PATCH", fmt.Sprintf("/v1/orgs/%d/", w.Org.ID), w.AdminT, map[string]any{"name": "Renamed"})
			require.Equal(t, 200, r.Status)
			require.Equal(t, "Renamed", r.Obj(t)["name"])

			// Delete: owner only; not with other members; not the only org.
			require.Equal(t, 403, a.Do("DELETE", fmt.Sprintf("/v1/orgs/%d/", w.Org.ID), w.AdminT, nil).Status)
			r = a.Do("DELETE", fmt.Sprintf("/v1/orgs/%d/", w.Org.ID), w.OwnerT, nil)
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "members")
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/orgs/%d/", sideID), w.MembT, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", fmt.Sprintf("/v1/orgs/%d/", sideID), w.MembT, nil).Status)
			lone := a.World()
			r = a.Do("DELETE", fmt.Sprintf("/v1/orgs/%d/", lone.Org.ID), lone.OwnerT, nil)
			require.Equal(t, 400, r.Status) // other members remain
		})

		t.Run("only org cannot be deleted", func(t *testing.T) {
			ctx := context.Background()
			u, err := a.Store.Orgs.CreateUser(ctx, "solo-"+storage.NewUUID()[28:]+"@example.com", "", "")
			require.NoError(t, err)
			o, err := a.Store.Orgs.CreateOrg(ctx, u.ID, "Solo")
			require.NoError(t, err)
			tok, err := a.Store.Keys.CreatePersonalToken(ctx, u.ID, "t")
			require.NoError(t, err)
			r := a.Do("DELETE", fmt.Sprintf("/v1/orgs/%d/", o.ID), "Token "+tok, nil)
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "only organization")
		})

		t.Run("members", func(t *testing.T) {
			w := a.World()
			r := a.Do("GET", "/v1/members", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			l := r.List(t)
			require.Len(t, l, 3)
			require.Equal(t, []any{"owner", "admin", "member"}, []any{l[0]["role"], l[1]["role"], l[2]["role"]})
			require.Equal(t, float64(w.OwnerM.ID), l[0]["id"], "membership id, not user id")
			require.Equal(t, false, l[0]["has_passkey"])

			mid := func(m storage.Member) string { return fmt.Sprint(m.ID) }
			require.Equal(t, 403, a.Do("DELETE", "/v1/members/"+mid(w.AdminM), w.MembK, nil).Status)
			require.Equal(t, 400, a.Do("DELETE", "/v1/members/"+mid(w.AdminM), w.AdminK, nil).Status, "self-removal")
			require.Equal(t, 403, a.Do("DELETE", "/v1/members/"+mid(w.OwnerM), w.AdminK, nil).Status, "owner")
			require.Equal(t, 404, a.Do("DELETE", "/v1/members/999999999", w.AdminK, nil).Status)

			require.Equal(t, 403, a.Do("PATCH", "/v1/members/"+mid(w.MembM)+"/role", w.AdminK, map[string]any{"role": "admin"}).Status)
			r = a.Do("PATCH", "/v1/members/"+mid(w.MembM)+"/role", w.OwnerK, map[string]any{"role": "owner"})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "role")
			require.Equal(t, 400, a.Do("PATCH", "/v1/members/"+mid(w.MembM)+"/role", w.OwnerK, map[string]any{"role": true}).Status)
			require.Equal(t, 400, a.Do("PATCH", "/v1/members/"+mid(w.OwnerM)+"/role", w.OwnerK, map[string]any{"role": "member"}).Status)
			require.Equal(t, 404, a.Do("PATCH", "/v1/members/999999999/role", w.OwnerK, map[string]any{"role": "member"}).Status)
			r = a.Do("PATCH", "/v1/members/"+mid(w.MembM)+"/role", w.OwnerK, map[string]any{"role": "admin"})
			require.Equal(t, 200, r.Status)
			require.Equal(t, "admin", r.Obj(t)["role"])
			// Now an admin: the other admin cannot remove them; the owner can.
			require.Equal(t, 403, a.Do("DELETE", "/v1/members/"+mid(w.MembM), w.AdminK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", "/v1/members/"+mid(w.MembM), w.OwnerK, nil).Status)
			// The removed member's key died with the membership.
			require.Equal(t, 401, a.Do("GET", "/v1/members", w.MembK, nil).Status)
		})

		t.Run("transfer ownership and leave", func(t *testing.T) {
			w := a.World()
			mid := func(m storage.Member) string { return fmt.Sprint(m.ID) }
			require.Equal(t, 403, a.Do("POST", "/v1/members/"+mid(w.MembM)+"/transfer-ownership", w.AdminK, nil).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/members/"+mid(w.OwnerM)+"/transfer-ownership", w.OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("POST", "/v1/members/999999999/transfer-ownership", w.OwnerK, nil).Status)
			r := a.Do("POST", "/v1/members/"+mid(w.AdminM)+"/transfer-ownership", w.OwnerK, nil)
			require.Equal(t, 200, r.Status)
			require.Contains(t, r.Obj(t)["detail"], w.Admin.Email)
			l := a.Do("GET", "/v1/members", w.MembK, nil).List(t)
			require.Equal(t, "admin", l[0]["role"])
			require.Equal(t, "owner", l[1]["role"])

			// The new owner cannot leave; the member cannot leave their only org.
			require.Equal(t, 403, a.Do("POST", "/v1/leave", w.AdminK, nil).Status)
			require.Equal(t, 403, a.Do("POST", "/v1/leave", w.MembK, nil).Status)
			_, err := a.Store.Orgs.CreateOrg(context.Background(), w.Member.ID, "Elsewhere")
			require.NoError(t, err)
			require.Equal(t, 204, a.Do("POST", "/v1/leave", w.MembT+w.OrgHdr(), nil).Status)
			require.Equal(t, 403, a.Do("POST", "/v1/leave", w.MembT+w.OrgHdr(), nil).Status, "no longer a member: the org header is refused")
		})

		t.Run("leave after losing membership is 404", func(t *testing.T) {
			w := a.World()
			_, err := a.Store.Orgs.CreateOrg(context.Background(), w.Member.ID, "Other")
			require.NoError(t, err)
			// Authenticate with a cached read, then lose membership before the write.
			require.NoError(t, a.Store.Orgs.RemoveMember(context.Background(), w.Org.ID, w.Owner.ID, w.MembM.ID))
			require.Equal(t, 401, a.Do("POST", "/v1/leave", w.MembK, nil).Status)
		})

		t.Run("ownership transfer races a role change", func(t *testing.T) {
			for round := range 8 {
				w := a.World()
				var wg sync.WaitGroup
				var tr, rc controltest.Resp
				wg.Go(func() {
					tr = a.Do("POST", fmt.Sprintf("/v1/members/%d/transfer-ownership", w.AdminM.ID), w.OwnerK, nil)
				})
				wg.Go(func() {
					rc = a.Do("PATCH", fmt.Sprintf("/v1/members/%d/role", w.AdminM.ID), w.OwnerK, map[string]any{"role": "member"})
				})
				wg.Wait()
				require.Equal(t, 200, tr.Status, "round %d: %s", round, tr.Body)
				require.Contains(t, []int{200, 400, 401, 403}, rc.Status, "round %d: %s", round, rc.Body)
				l := a.Do("GET", "/v1/members", w.MembK, nil).List(t)
				owners := 0
				for _, m := range l {
					if m["role"] == "owner" {
						owners++
						require.Equal(t, float64(w.AdminM.ID), m["id"])
					}
				}
				require.Equal(t, 1, owners, "round %d", round)
			}
		})

		t.Run("invites", func(t *testing.T) {
			w := a.World()
			require.Equal(t, 403, a.Do("POST", "/v1/invites", w.MembK, map[string]any{"email": "a@b.example"}).Status)
			require.Equal(t, 403, a.Do("POST", "/v1/invites", w.AdminK, map[string]any{"email": "a@b.example", "role": "admin"}).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/invites", w.AdminK, map[string]any{"email": "nope"}).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/invites", w.AdminK, map[string]any{"email": "a@b.example", "role": "owner"}).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/invites", w.AdminK, map[string]any{"email": w.Member.Email}).Status, "already a member")
			email := "invitee-" + storage.NewUUID()[28:] + "@example.com"
			r := a.Do("POST", "/v1/invites", w.OwnerK, map[string]any{"email": email, "role": "admin"})
			require.Equal(t, 201, r.Status, string(r.Body))
			inv := r.Obj(t)
			tok := inv["token"].(string)
			require.Equal(t, "pending", inv["status"])
			require.Equal(t, "https://voice.example/v1/invitations/"+tok, inv["invite_url"])
			l := a.Do("GET", "/v1/invites", w.AdminK, nil).List(t)
			require.Len(t, l, 1)
			require.NotContains(t, l[0], "token")

			ctx := context.Background()
			u, err := a.Store.Orgs.CreateUser(ctx, email, "In", "Vitee")
			require.NoError(t, err)
			_, err = a.Store.Orgs.CreateOrg(ctx, u.ID, "Mine")
			require.NoError(t, err)
			pt, err := a.Store.Keys.CreatePersonalToken(ctx, u.ID, "t")
			require.NoError(t, err)
			ut := "Token " + pt
			r = a.Do("GET", "/v1/invitations/"+tok, ut, nil)
			require.Equal(t, 200, r.Status)
			require.Equal(t, w.Org.Name, r.Obj(t)["org_name"])
			require.Equal(t, 403, a.Do("POST", "/v1/invitations/"+tok+"/accept", w.MembT, nil).Status, "another address")
			r = a.Do("POST", "/v1/invitations/"+tok+"/accept", ut, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "admin", r.Obj(t)["role"])
			require.Equal(t, 410, a.Do("POST", "/v1/invitations/"+tok+"/accept", ut, nil).Status, "used")
			// Fourth invite access request within the hour.
			r = a.Do("GET", "/v1/invitations/"+tok, ut, nil)
			require.Equal(t, 429, r.Status)
			require.Empty(t, r.Header.Get("Retry-After"))
			require.Contains(t, r.Obj(t), "detail")

			// A second invite for someone who joined meanwhile: 409 on accept.
			email2 := "twice-" + storage.NewUUID()[28:] + "@example.com"
			r1 := a.Do("POST", "/v1/invites", w.OwnerK, map[string]any{"email": email2}).Obj(t)
			r2 := a.Do("POST", "/v1/invites", w.OwnerK, map[string]any{"email": email2}).Obj(t)
			u2, err := a.Store.Orgs.CreateUser(ctx, email2, "", "")
			require.NoError(t, err)
			pt2, err := a.Store.Keys.CreatePersonalToken(ctx, u2.ID, "t")
			require.NoError(t, err)
			require.Equal(t, 200, a.Do("POST", "/v1/invitations/"+r1["token"].(string)+"/accept", "Token "+pt2, nil).Status)
			r = a.Do("POST", "/v1/invitations/"+r2["token"].(string)+"/accept", "Token "+pt2, nil)
			require.Equal(t, 409, r.Status, string(r.Body))

			r = a.Do("POST", "/v1/invites", w.OwnerK, map[string]any{"email": "later@example.com"})
			id := r.Obj(t)["id"].(string)
			require.Equal(t, 204, a.Do("DELETE", "/v1/invites/"+id, w.AdminK, nil).Status)
			require.Equal(t, 410, a.Do("DELETE", "/v1/invites/"+id, w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", "/v1/invites/"+storage.NewUUID(), w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("GET", "/v1/invitations/inv_unknown", w.OwnerT, nil).Status)
		})
	})
}
