package control_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestOutboundCall(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newResAPI(t, db, testPool)

		t.Run("guards and hand-off", func(t *testing.T) {
			o := a.callOrg("+13105550400")
			call := map[string]any{"agent_id": o.agentID, "from_number": o.number, "to_number": "+14155551234"}
			for _, body := range []map[string]any{{}, {"agent_id": o.agentID, "from_number": o.number}, {"agent_id": o.agentID, "from_number": "3105550400", "to_number": "+14155551234"},
				{"agent_id": o.agentID, "from_number": o.number, "to_number": "+0123"}, {"agent_id": "one", "from_number": o.number, "to_number": "+14155551234"}} {
				r := a.do("POST", "/v1/call", o.membK, body)
				require.Equal(t, 400, r.status, "%v: %s", body, r.body)
			}
			r := a.do("POST", "/v1/call", o.membK, map[string]any{"agent_id": 999999999, "from_number": o.number, "to_number": "+14155551234"})
			require.Equal(t, 404, r.status)
			foreign := a.agent(a.world().ownerK, "Not yours", nil)
			require.Equal(t, 404, a.do("POST", "/v1/call", o.membK, map[string]any{"agent_id": id(foreign), "from_number": o.number, "to_number": "+14155551234"}).status)
			other := a.callOrg("+13105550401")
			r = a.do("POST", "/v1/call", o.membK, map[string]any{"agent_id": o.agentID, "from_number": other.number, "to_number": "+14155551234"})
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t), "from_number")
			r = a.do("POST", "/v1/call", o.membK, map[string]any{"agent_id": o.agentID, "from_number": "+19995550000", "to_number": "+14155551234"})
			require.Equal(t, 400, r.status)

			// Demo numbers are inbound only.
			r = a.do("POST", "/v1/phone-numbers", o.membK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.status)
			demo := r.obj(t)
			r = a.do("POST", "/v1/call", o.membK, map[string]any{"agent_id": o.agentID, "from_number": demo["number"], "to_number": "+14155551234"})
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t)["from_number"].([]any)[0], "inbound only")
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", id(demo)), o.membK, nil).status)

			// A number whose verification failed is provisioning: 409.
			a.verifier.set(numbers.VoIPResult{Verified: false}, nil)
			require.Equal(t, 200, a.do("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", o.numID), o.membK, nil).status)
			r = a.do("POST", "/v1/call", o.membK, call)
			require.Equal(t, 409, r.status)
			require.Contains(t, r.obj(t)["detail"], "provisioning")
			a.verifier.set(numbers.VoIPResult{Verified: true}, nil)
			require.Equal(t, 200, a.do("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", o.numID), o.membK, nil).status)

			r = a.do("POST", "/v1/call", o.membK, call)
			require.Equal(t, 201, r.status, string(r.body))
			c := r.obj(t)
			require.Equal(t, "outbound", c["direction"])
			require.Equal(t, "in_progress", c["status"])
			require.Equal(t, o.number, c["from_number"])
			require.Equal(t, "+14155551234", c["to_number"])
			require.Equal(t, float64(o.agentID), c["agent_id"])
			require.Equal(t, "Answer for Acme Dental.", c["prompt_snapshot"])
			a.dialer.mu.Lock()
			got := a.dialer.calls[len(a.dialer.calls)-1]
			a.dialer.mu.Unlock()
			require.Equal(t, id(c), got.CallID)
			require.Equal(t, o.org.ID, got.OrgID)
			require.Equal(t, "+14155551234", got.To)
			require.Equal(t, "s3cret-pass", got.Trunk.Password)
			require.Equal(t, "sip.carrier.example", got.Trunk.Host)
			require.Equal(t, []string{"PCMU", "PCMA"}, got.Trunk.Codecs)
			require.Equal(t, "Answer for Acme Dental.", got.Agent.Prompt)
			bal0, err := a.store.Billing.Balance(t.Context(), o.org.ID)
			require.NoError(t, err)
			require.Positive(t, got.MaxDuration, "the dialer learns how long the balance lasts")
			require.LessOrEqual(t, got.MaxDuration, time.Duration(bal0*4/1*15+7)*time.Second)
			require.Equal(t, 200, a.do("GET", fmt.Sprintf("/v1/calls/%d", id(c)), o.membK, nil).status)

			// The trunk refuses: 502, and the call is recorded as failed.
			a.dialer.mu.Lock()
			a.dialer.err = errors.New("503 Service Unavailable from trunk")
			a.dialer.mu.Unlock()
			r = a.do("POST", "/v1/call", o.membK, call)
			require.Equal(t, 502, r.status)
			require.NotContains(t, string(r.body), "503 Service")
			a.dialer.mu.Lock()
			failedID := a.dialer.calls[len(a.dialer.calls)-1].CallID
			a.dialer.err = nil
			a.dialer.mu.Unlock()
			fc := a.do("GET", fmt.Sprintf("/v1/calls/%d", failedID), o.membK, nil).obj(t)
			require.Equal(t, "failed", fc["status"])
			require.Equal(t, "dial_failed", fc["end_reason"])

			// A balance below the 0.25-minute minimum at the agent's price: 402.
			bal, err := a.store.Billing.Balance(t.Context(), o.org.ID)
			require.NoError(t, err)
			_, err = a.store.Billing.Post(t.Context(), o.org.ID, storage.TxAdjustment, 1-bal, "drain", "")
			require.NoError(t, err)
			r = a.do("POST", "/v1/call", o.membK, call)
			require.Equal(t, 402, r.status)
			require.Contains(t, r.obj(t)["detail"], "minimum")
			// Zero balance: 402.
			_, err = a.store.Billing.Post(t.Context(), o.org.ID, storage.TxAdjustment, -1, "drain", "")
			require.NoError(t, err)
			r = a.do("POST", "/v1/call", o.membK, call)
			require.Equal(t, 402, r.status)
			require.Contains(t, r.obj(t)["detail"], "balance")
		})

		t.Run("without telephony the server says so", func(t *testing.T) {
			b := newAPI(t, db)
			w := b.world()
			require.Equal(t, 400, b.do("POST", "/v1/call", w.membK, map[string]any{}).status, "input is checked first")
			r := b.do("POST", "/v1/call", w.membK, map[string]any{"agent_id": 1, "from_number": "+13105550400", "to_number": "+14155551234"})
			require.Equal(t, 503, r.status)
			require.Contains(t, r.obj(t)["detail"], "telephony")
		})
	})
}
