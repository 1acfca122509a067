package numbers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestVoIPConnections(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		ctx := context.Background()

		t.Run("crud with a write-only, encrypted password", func(t *testing.T) {
			w, other := a.World(), a.World()
			body := map[string]any{"host": "sip.carrier.example", "transport": "TLS", "username": "acme", "password": "hunter2-trunk",
				"outbound_proxy": "proxy.carrier.example:5070", "allowed_inbound_addresses": []string{"203.0.113.7", "198.51.100.0/24"},
				"codecs": []string{"pcmu", "OPUS", "PCMU"}}
			require.Equal(t, 403, a.Do("POST", "/v1/voip-connections", w.MembK, body).Status)
			for _, bad := range []map[string]any{{}, {"host": "bad host!"}, {"host": "h.example", "transport": "sctp"}, {"host": "h.example", "port": 70000},
				{"host": "h.example", "codecs": []string{"G729"}}, {"host": "h.example", "codecs": []string{}}, {"host": "h.example", "allowed_inbound_addresses": []string{"nope"}},
				{"host": "h.example", "outbound_proxy": "bad proxy"}, {"host": "h.example", "password": strings.Repeat("p", 129)}} {
				r := a.Do("POST", "/v1/voip-connections", w.AdminK, bad)
				require.Equal(t, 400, r.Status, "%v: %s", bad, r.Body)
			}
			r := a.Do("POST", "/v1/voip-connections", w.AdminK, body)
			require.Equal(t, 201, r.Status, string(r.Body))
			c := r.Obj(t)
			require.Equal(t, "sip.carrier.example", c["name"], "name defaults to the host")
			require.Equal(t, "tls", c["transport"])
			require.Equal(t, float64(5061), c["port"], "TLS default port")
			require.Equal(t, true, c["has_password"])
			require.NotContains(t, string(r.Body), "hunter2-trunk")
			require.NotContains(t, c, "password")
			require.Equal(t, []any{"PCMU", "opus"}, c["codecs"])
			require.Equal(t, []any{"203.0.113.7", "198.51.100.0/24"}, c["allowed_inbound_addresses"])
			var sealed string
			require.NoError(t, db.QueryRowContext(ctx, `SELECT password_enc FROM voip_connections WHERE id = $1`, controltest.ID(c)).Scan(&sealed))
			require.NotContains(t, sealed, "hunter2")
			stored, err := a.Store.Numbers.VoIPConnection(ctx, w.Org.ID, controltest.ID(c))
			require.NoError(t, err)
			require.Equal(t, "hunter2-trunk", stored.Password, "retrievable for the telephony side")

			cp := fmt.Sprintf("/v1/voip-connections/%d", controltest.ID(c))
			require.Equal(t, 200, a.Do("GET", cp, w.MembK, nil).Status)
			require.Equal(t, 404, a.Do("GET", cp, other.OwnerK, nil).Status)
			require.Len(t, a.Do("GET", "/v1/voip-connections", w.MembK, nil).List(t), 1)
			require.Equal(t, 403, a.Do("PATCH", cp, w.MembK, map[string]any{"name": "x"}).Status)
			r = a.Do("PATCH", cp, w.AdminK, map[string]any{"name": "Carrier", "password": nil, "port": 5080})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, false, r.Obj(t)["has_password"])
			require.Equal(t, float64(5080), r.Obj(t)["port"])
			require.Equal(t, "tls", r.Obj(t)["transport"], "unchanged fields stay")
			require.Equal(t, 400, a.Do("PATCH", cp, w.AdminK, map[string]any{"transport": "carrier-pigeon"}).Status)
			require.Equal(t, "Carrier", a.Do("GET", cp, w.MembK, nil).Obj(t)["name"])
			require.Equal(t, 404, a.Do("PATCH", cp, other.OwnerK, map[string]any{"name": "x"}).Status)
			require.Equal(t, 204, a.Do("DELETE", cp, w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", cp, w.AdminK, nil).Status)
		})

		t.Run("importing numbers", func(t *testing.T) {
			w, other := a.World(), a.World()
			conn, num := a.Trunk(w, "+13105550100")
			require.Equal(t, "voip", num["source"])
			require.Equal(t, "active", num["status"])
			require.Equal(t, "unverified", num["voip_verification_status"])
			require.Equal(t, float64(conn), num["voip_connection_id"])
			ip := fmt.Sprintf("/v1/voip-connections/%d/numbers", conn)
			require.Equal(t, 403, a.Do("POST", ip, w.MembK, map[string]any{"numbers": []string{"+13105550101"}}).Status)
			require.Equal(t, 400, a.Do("POST", ip, w.AdminK, map[string]any{"numbers": []string{}}).Status)
			require.Equal(t, 400, a.Do("POST", ip, w.AdminK, map[string]any{"numbers": []string{"+13105550101", "3105550102"}}).Status)
			require.Equal(t, 404, a.Do("POST", ip, other.OwnerK, map[string]any{"numbers": []string{"+13105550101"}}).Status)
			// All or none: one is taken, so neither is imported.
			r := a.Do("POST", ip, w.AdminK, map[string]any{"numbers": []string{"+13105550101", "+13105550100"}})
			require.Equal(t, 409, r.Status, string(r.Body))
			require.Len(t, a.Do("GET", "/v1/phone-numbers", w.MembK, nil).List(t), 1)
			r = a.Do("POST", ip, w.AdminK, map[string]any{"numbers": []string{"+13105550101", "+13105550102"}, "label": "Support"})
			require.Equal(t, 201, r.Status, string(r.Body))
			require.Len(t, r.List(t), 2)
			require.Equal(t, "Support", r.List(t)[0]["label"])
			require.Equal(t, float64(3), a.Do("GET", fmt.Sprintf("/v1/voip-connections/%d", conn), w.MembK, nil).Obj(t)["phone_number_count"])

			// The same through POST /v1/phone-numbers with source voip.
			one := map[string]any{"source": "voip", "number": "+13105550103", "voip_connection_id": conn}
			require.Equal(t, 403, a.Do("POST", "/v1/phone-numbers", w.MembK, one).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/phone-numbers", w.AdminK, map[string]any{"source": "voip", "number": "+13105550103"}).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/phone-numbers", w.AdminK, map[string]any{"source": "voip", "voip_connection_id": conn}).Status)
			r = a.Do("POST", "/v1/phone-numbers", other.OwnerK, one)
			require.Equal(t, 400, r.Status, "a connection of another org")
			require.Contains(t, r.Obj(t), "voip_connection_id")
			r = a.Do("POST", "/v1/phone-numbers", w.AdminK, one)
			require.Equal(t, 201, r.Status, string(r.Body))
			require.Equal(t, "voip", r.Obj(t)["source"])
			require.Equal(t, 409, a.Do("POST", "/v1/phone-numbers", w.AdminK, one).Status)
			// VoIP numbers take outbound agents.
			ag := a.Agent(w.OwnerK, "Dialer", nil)
			r = a.Do("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(r.Obj(t))), w.MembK, map[string]any{"outbound_agent_id": controltest.ID(ag)})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, float64(controltest.ID(ag)), r.Obj(t)["outbound_agent_id"])

			// A connection with numbers cannot be deleted.
			cp := fmt.Sprintf("/v1/voip-connections/%d", conn)
			require.Equal(t, 409, a.Do("DELETE", cp, w.AdminK, nil).Status)
			for _, n := range a.Do("GET", "/v1/phone-numbers", w.MembK, nil).List(t) {
				require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(n)), w.MembK, nil).Status)
			}
			require.Equal(t, 204, a.Do("DELETE", cp, w.AdminK, nil).Status)
		})

		t.Run("verify-voip", func(t *testing.T) {
			w := a.World()
			_, num := a.Trunk(w, "+13105550200")
			vp := fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", controltest.ID(num))
			np := fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(num))

			// Failure: verification failed and an active number goes to provisioning.
			a.Verifier.Set(numbers.VoIPResult{Verified: false, Reason: "The trunk answered 403 Forbidden."}, nil)
			r := a.Do("POST", vp, w.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			res := r.Obj(t)
			require.Equal(t, float64(controltest.ID(num)), res["phone_number_id"])
			require.Equal(t, "failed", res["voip_verification_status"])
			require.Equal(t, "provisioning", res["status"])
			require.Equal(t, "The trunk answered 403 Forbidden.", res["detail"])
			require.Equal(t, "usd", res["provider_charge_currency"])
			require.Equal(t, float64(0), res["provider_charge_estimate_cents"])
			require.NotEmpty(t, res["provider_charge_note"])
			got := a.Do("GET", np, w.MembK, nil).Obj(t)
			require.Equal(t, "provisioning", got["status"])
			require.Nil(t, got["voip_last_verified_at"])
			chk := a.Verifier.Checks()[len(a.Verifier.Checks())-1]
			require.Equal(t, numbers.VoIPCheck{Number: "+13105550200", Host: "sip.carrier.example", Port: 5060, Transport: "udp", Username: "acme", Password: "s3cret-pass"}, chk)

			// Success: verified, timestamp set, active again.
			a.Verifier.Set(numbers.VoIPResult{Verified: true, ChargeEstimateCents: 1, ChargeNote: "one OPTIONS probe"}, nil)
			r = a.Do("POST", vp, w.MembK, nil)
			require.Equal(t, 200, r.Status)
			res = r.Obj(t)
			require.Equal(t, "verified", res["voip_verification_status"])
			require.Equal(t, "active", res["status"])
			require.Equal(t, float64(1), res["provider_charge_estimate_cents"])
			require.Equal(t, "one OPTIONS probe", res["provider_charge_note"])
			got = a.Do("GET", np, w.MembK, nil).Obj(t)
			require.NotNil(t, got["voip_last_verified_at"])
			v := a.Do("GET", np+"/versions?limit=1", w.MembK, nil).Obj(t)["results"].([]any)[0].(map[string]any)
			require.ElementsMatch(t, []any{"status", "voip_verification_status", "voip_last_verified_at"}, v["changed_fields"])

			// A check that cannot run at all is 502 and changes nothing.
			a.Verifier.Set(numbers.VoIPResult{}, errors.New("no route to host"))
			r = a.Do("POST", vp, w.MembK, nil)
			require.Equal(t, 502, r.Status)
			require.NotContains(t, string(r.Body), "no route")
			require.Equal(t, "verified", a.Do("GET", np, w.MembK, nil).Obj(t)["voip_verification_status"])

			// Demo numbers are not verified; unknown numbers are 404.
			r = a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.Status)
			require.Equal(t, 400, a.Do("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", controltest.ID(r.Obj(t))), w.MembK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(r.Obj(t))), w.MembK, nil).Status)
			require.Equal(t, 404, a.Do("POST", "/v1/phone-numbers/999999999/verify-voip", w.MembK, nil).Status)

			// Without a verifier wired the server says so.
			b := controltest.New(t, db)
			r = b.Do("POST", vp, w.MembK, nil)
			require.Equal(t, 503, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "telephony")
		})
	})
}
