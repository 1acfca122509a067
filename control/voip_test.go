package control_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestVoIPConnections(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newResAPI(t, db, testPool)
		ctx := context.Background()

		t.Run("crud with a write-only, encrypted password", func(t *testing.T) {
			w, other := a.world(), a.world()
			body := map[string]any{"host": "sip.carrier.example", "transport": "TLS", "username": "acme", "password": "hunter2-trunk",
				"outbound_proxy": "proxy.carrier.example:5070", "allowed_inbound_addresses": []string{"203.0.113.7", "198.51.100.0/24"},
				"codecs": []string{"pcmu", "OPUS", "PCMU"}}
			require.Equal(t, 403, a.do("POST", "/v1/voip-connections", w.membK, body).status)
			for _, bad := range []map[string]any{{}, {"host": "bad host!"}, {"host": "h.example", "transport": "sctp"}, {"host": "h.example", "port": 70000},
				{"host": "h.example", "codecs": []string{"G729"}}, {"host": "h.example", "codecs": []string{}}, {"host": "h.example", "allowed_inbound_addresses": []string{"nope"}},
				{"host": "h.example", "outbound_proxy": "bad proxy"}, {"host": "h.example", "password": strings.Repeat("p", 129)}} {
				r := a.do("POST", "/v1/voip-connections", w.adminK, bad)
				require.Equal(t, 400, r.status, "%v: %s", bad, r.body)
			}
			r := a.do("POST", "/v1/voip-connections", w.adminK, body)
			require.Equal(t, 201, r.status, string(r.body))
			c := r.obj(t)
			require.Equal(t, "sip.carrier.example", c["name"], "name defaults to the host")
			require.Equal(t, "tls", c["transport"])
			require.Equal(t, float64(5061), c["port"], "TLS default port")
			require.Equal(t, true, c["has_password"])
			require.NotContains(t, string(r.body), "hunter2-trunk")
			require.NotContains(t, c, "password")
			require.Equal(t, []any{"PCMU", "opus"}, c["codecs"])
			require.Equal(t, []any{"203.0.113.7", "198.51.100.0/24"}, c["allowed_inbound_addresses"])
			var sealed string
			require.NoError(t, db.QueryRowContext(ctx, `SELECT password_enc FROM voip_connections WHERE id = $1`, id(c)).Scan(&sealed))
			require.NotContains(t, sealed, "hunter2")
			stored, err := a.store.Numbers.VoIPConnection(ctx, w.org.ID, id(c))
			require.NoError(t, err)
			require.Equal(t, "hunter2-trunk", stored.Password, "retrievable for the telephony side")

			cp := fmt.Sprintf("/v1/voip-connections/%d", id(c))
			require.Equal(t, 200, a.do("GET", cp, w.membK, nil).status)
			require.Equal(t, 404, a.do("GET", cp, other.ownerK, nil).status)
			require.Len(t, a.do("GET", "/v1/voip-connections", w.membK, nil).list(t), 1)
			require.Equal(t, 403, a.do("PATCH", cp, w.membK, map[string]any{"name": "x"}).status)
			r = a.do("PATCH", cp, w.adminK, map[string]any{"name": "Carrier", "password": nil, "port": 5080})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, false, r.obj(t)["has_password"])
			require.Equal(t, float64(5080), r.obj(t)["port"])
			require.Equal(t, "tls", r.obj(t)["transport"], "unchanged fields stay")
			require.Equal(t, 400, a.do("PATCH", cp, w.adminK, map[string]any{"transport": "carrier-pigeon"}).status)
			require.Equal(t, "Carrier", a.do("GET", cp, w.membK, nil).obj(t)["name"])
			require.Equal(t, 404, a.do("PATCH", cp, other.ownerK, map[string]any{"name": "x"}).status)
			require.Equal(t, 204, a.do("DELETE", cp, w.adminK, nil).status)
			require.Equal(t, 404, a.do("DELETE", cp, w.adminK, nil).status)
		})

		t.Run("importing numbers", func(t *testing.T) {
			w, other := a.world(), a.world()
			conn, num := a.trunk(w, "+13105550100")
			require.Equal(t, "voip", num["source"])
			require.Equal(t, "active", num["status"])
			require.Equal(t, "unverified", num["voip_verification_status"])
			require.Equal(t, float64(conn), num["voip_connection_id"])
			ip := fmt.Sprintf("/v1/voip-connections/%d/numbers", conn)
			require.Equal(t, 403, a.do("POST", ip, w.membK, map[string]any{"numbers": []string{"+13105550101"}}).status)
			require.Equal(t, 400, a.do("POST", ip, w.adminK, map[string]any{"numbers": []string{}}).status)
			require.Equal(t, 400, a.do("POST", ip, w.adminK, map[string]any{"numbers": []string{"+13105550101", "3105550102"}}).status)
			require.Equal(t, 404, a.do("POST", ip, other.ownerK, map[string]any{"numbers": []string{"+13105550101"}}).status)
			// All or none: one is taken, so neither is imported.
			r := a.do("POST", ip, w.adminK, map[string]any{"numbers": []string{"+13105550101", "+13105550100"}})
			require.Equal(t, 409, r.status, string(r.body))
			require.Len(t, a.do("GET", "/v1/phone-numbers", w.membK, nil).list(t), 1)
			r = a.do("POST", ip, w.adminK, map[string]any{"numbers": []string{"+13105550101", "+13105550102"}, "label": "Support"})
			require.Equal(t, 201, r.status, string(r.body))
			require.Len(t, r.list(t), 2)
			require.Equal(t, "Support", r.list(t)[0]["label"])
			require.Equal(t, float64(3), a.do("GET", fmt.Sprintf("/v1/voip-connections/%d", conn), w.membK, nil).obj(t)["phone_number_count"])

			// The same through POST /v1/phone-numbers with source voip.
			one := map[string]any{"source": "voip", "number": "+13105550103", "voip_connection_id": conn}
			require.Equal(t, 403, a.do("POST", "/v1/phone-numbers", w.membK, one).status)
			require.Equal(t, 400, a.do("POST", "/v1/phone-numbers", w.adminK, map[string]any{"source": "voip", "number": "+13105550103"}).status)
			require.Equal(t, 400, a.do("POST", "/v1/phone-numbers", w.adminK, map[string]any{"source": "voip", "voip_connection_id": conn}).status)
			r = a.do("POST", "/v1/phone-numbers", other.ownerK, one)
			require.Equal(t, 400, r.status, "a connection of another org")
			require.Contains(t, r.obj(t), "voip_connection_id")
			r = a.do("POST", "/v1/phone-numbers", w.adminK, one)
			require.Equal(t, 201, r.status, string(r.body))
			require.Equal(t, "voip", r.obj(t)["source"])
			require.Equal(t, 409, a.do("POST", "/v1/phone-numbers", w.adminK, one).status)
			// VoIP numbers take outbound agents.
			ag := a.agent(w.ownerK, "Dialer", nil)
			r = a.do("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", id(r.obj(t))), w.membK, map[string]any{"outbound_agent_id": id(ag)})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, float64(id(ag)), r.obj(t)["outbound_agent_id"])

			// A connection with numbers cannot be deleted.
			cp := fmt.Sprintf("/v1/voip-connections/%d", conn)
			require.Equal(t, 409, a.do("DELETE", cp, w.adminK, nil).status)
			for _, n := range a.do("GET", "/v1/phone-numbers", w.membK, nil).list(t) {
				require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", id(n)), w.membK, nil).status)
			}
			require.Equal(t, 204, a.do("DELETE", cp, w.adminK, nil).status)
		})

		t.Run("verify-voip", func(t *testing.T) {
			w := a.world()
			_, num := a.trunk(w, "+13105550200")
			vp := fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", id(num))
			np := fmt.Sprintf("/v1/phone-numbers/%d", id(num))

			// Failure: verification failed and an active number goes to provisioning.
			a.verifier.set(control.VoIPResult{Verified: false, Reason: "The trunk answered 403 Forbidden."}, nil)
			r := a.do("POST", vp, w.membK, nil)
			require.Equal(t, 200, r.status, string(r.body))
			res := r.obj(t)
			require.Equal(t, float64(id(num)), res["phone_number_id"])
			require.Equal(t, "failed", res["voip_verification_status"])
			require.Equal(t, "provisioning", res["status"])
			require.Equal(t, "The trunk answered 403 Forbidden.", res["detail"])
			require.Equal(t, "usd", res["provider_charge_currency"])
			require.Equal(t, float64(0), res["provider_charge_estimate_cents"])
			require.NotEmpty(t, res["provider_charge_note"])
			got := a.do("GET", np, w.membK, nil).obj(t)
			require.Equal(t, "provisioning", got["status"])
			require.Nil(t, got["voip_last_verified_at"])
			chk := a.verifier.checks[len(a.verifier.checks)-1]
			require.Equal(t, control.VoIPCheck{Number: "+13105550200", Host: "sip.carrier.example", Port: 5060, Transport: "udp", Username: "acme", Password: "s3cret-pass"}, chk)

			// Success: verified, timestamp set, active again.
			a.verifier.set(control.VoIPResult{Verified: true, ChargeEstimateCents: 1, ChargeNote: "one OPTIONS probe"}, nil)
			r = a.do("POST", vp, w.membK, nil)
			require.Equal(t, 200, r.status)
			res = r.obj(t)
			require.Equal(t, "verified", res["voip_verification_status"])
			require.Equal(t, "active", res["status"])
			require.Equal(t, float64(1), res["provider_charge_estimate_cents"])
			require.Equal(t, "one OPTIONS probe", res["provider_charge_note"])
			got = a.do("GET", np, w.membK, nil).obj(t)
			require.NotNil(t, got["voip_last_verified_at"])
			v := a.do("GET", np+"/versions?limit=1", w.membK, nil).obj(t)["results"].([]any)[0].(map[string]any)
			require.ElementsMatch(t, []any{"status", "voip_verification_status", "voip_last_verified_at"}, v["changed_fields"])

			// A check that cannot run at all is 502 and changes nothing.
			a.verifier.set(control.VoIPResult{}, errors.New("no route to host"))
			r = a.do("POST", vp, w.membK, nil)
			require.Equal(t, 502, r.status)
			require.NotContains(t, string(r.body), "no route")
			require.Equal(t, "verified", a.do("GET", np, w.membK, nil).obj(t)["voip_verification_status"])

			// Demo numbers are not verified; unknown numbers are 404.
			r = a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.status)
			require.Equal(t, 400, a.do("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", id(r.obj(t))), w.membK, nil).status)
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", id(r.obj(t))), w.membK, nil).status)
			require.Equal(t, 404, a.do("POST", "/v1/phone-numbers/999999999/verify-voip", w.membK, nil).status)

			// Without a verifier wired the server says so.
			b := newAPI(t, db)
			r = b.do("POST", vp, w.membK, nil)
			require.Equal(t, 503, r.status)
			require.Contains(t, r.obj(t)["detail"], "telephony")
		})
	})
}
