package calllog_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestOutboundCall(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)

		t.Run("guards and hand-off", func(t *testing.T) {
			o := a.CallOrg("+13105550400")
			call := map[string]any{"agent_id": o.AgentID, "from_number": o.Number, "to_number": "+14155551234"}
			for _, body := range []map[string]any{{}, {"agent_id": o.AgentID, "from_number": o.Number}, {"agent_id": o.AgentID, "from_number": "3105550400", "to_number": "+14155551234"},
				{"agent_id": o.AgentID, "from_number": o.Number, "to_number": "+0123"}, {"agent_id": "one", "from_number": o.Number, "to_number": "+14155551234"}} {
				r := a.Do("POST", "/v1/call", o.MembK, body)
				require.Equal(t, 400, r.Status, "%v: %s", body, r.Body)
			}
			r := a.Do("POST", "/v1/call", o.MembK, map[string]any{"agent_id": 999999999, "from_number": o.Number, "to_number": "+14155551234"})
			require.Equal(t, 404, r.Status)
			foreign := a.Agent(a.World().OwnerK, "Not yours", nil)
			require.Equal(t, 404, a.Do("POST", "/v1/call", o.MembK, map[string]any{"agent_id": controltest.ID(foreign), "from_number": o.Number, "to_number": "+14155551234"}).Status)
			other := a.CallOrg("+13105550401")
			r = a.Do("POST", "/v1/call", o.MembK, map[string]any{"agent_id": o.AgentID, "from_number": other.Number, "to_number": "+14155551234"})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "from_number")
			r = a.Do("POST", "/v1/call", o.MembK, map[string]any{"agent_id": o.AgentID, "from_number": "+19995550000", "to_number": "+14155551234"})
			require.Equal(t, 400, r.Status)

			// Demo numbers are inbound only.
			r = a.Do("POST", "/v1/phone-numbers", o.MembK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.Status)
			demo := r.Obj(t)
			r = a.Do("POST", "/v1/call", o.MembK, map[string]any{"agent_id": o.AgentID, "from_number": demo["number"], "to_number": "+14155551234"})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t)["from_number"].([]any)[0], "inbound only")
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(demo)), o.MembK, nil).Status)

			// A number whose verification failed is provisioning: 409.
			a.Verifier.Set(numbers.VoIPResult{Verified: false}, nil)
			require.Equal(t, 200, a.Do("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", o.NumID), o.MembK, nil).Status)
			r = a.Do("POST", "/v1/call", o.MembK, call)
			require.Equal(t, 409, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "provisioning")
			a.Verifier.Set(numbers.VoIPResult{Verified: true}, nil)
			require.Equal(t, 200, a.Do("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", o.NumID), o.MembK, nil).Status)

			r = a.Do("POST", "/v1/call", o.MembK, call)
			require.Equal(t, 201, r.Status, string(r.Body))
			c := r.Obj(t)
			require.Equal(t, "outbound", c["direction"])
			require.Equal(t, "in_progress", c["status"])
			require.Equal(t, o.Number, c["from_number"])
			require.Equal(t, "+14155551234", c["to_number"])
			require.Equal(t, float64(o.AgentID), c["agent_id"])
			require.Equal(t, "Answer for Acme Dental.", c["prompt_snapshot"])
			got := a.Dialer.Last()
			require.Equal(t, controltest.ID(c), got.CallID)
			require.Equal(t, o.Org.ID, got.OrgID)
			require.Equal(t, "+14155551234", got.To)
			require.Equal(t, "s3cret-pass", got.Trunk.Password)
			require.Equal(t, "sip.carrier.example", got.Trunk.Host)
			require.Equal(t, []string{"PCMU", "PCMA"}, got.Trunk.Codecs)
			require.Equal(t, "Answer for Acme Dental.", got.Agent.Prompt)
			bal0, err := a.Store.Billing.Balance(t.Context(), o.Org.ID)
			require.NoError(t, err)
			require.Positive(t, got.MaxDuration, "the dialer learns how long the balance lasts")
			require.LessOrEqual(t, got.MaxDuration, time.Duration(bal0*4/1*15+7)*time.Second)
			require.Equal(t, 200, a.Do("GET", fmt.Sprintf("/v1/calls/%d", controltest.ID(c)), o.MembK, nil).Status)

			// The trunk refuses: 502, and the call is recorded as failed.
			a.Dialer.SetErr(errors.New("503 Service Unavailable from trunk"))
			r = a.Do("POST", "/v1/call", o.MembK, call)
			require.Equal(t, 502, r.Status)
			require.NotContains(t, string(r.Body), "503 Service")
			failedID := a.Dialer.Last().CallID
			a.Dialer.SetErr(nil)
			fc := a.Do("GET", fmt.Sprintf("/v1/calls/%d", failedID), o.MembK, nil).Obj(t)
			require.Equal(t, "failed", fc["status"])
			require.Equal(t, "dial_failed", fc["end_reason"])

			// A balance below the 0.25-minute minimum at the agent's price: 402.
			bal, err := a.Store.Billing.Balance(t.Context(), o.Org.ID)
			require.NoError(t, err)
			_, err = a.Store.Billing.Post(t.Context(), o.Org.ID, storage.TxAdjustment, 1-bal, "drain", "")
			require.NoError(t, err)
			r = a.Do("POST", "/v1/call", o.MembK, call)
			require.Equal(t, 402, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "minimum")
			// Zero balance: 402.
			_, err = a.Store.Billing.Post(t.Context(), o.Org.ID, storage.TxAdjustment, -1, "drain", "")
			require.NoError(t, err)
			r = a.Do("POST", "/v1/call", o.MembK, call)
			require.Equal(t, 402, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "balance")
		})

		t.Run("without telephony the server says so", func(t *testing.T) {
			b := controltest.New(t, db)
			w := b.World()
			require.Equal(t, 400, b.Do("POST", "/v1/call", w.MembK, map[string]any{}).Status, "input is checked first")
			r := b.Do("POST", "/v1/call", w.MembK, map[string]any{"agent_id": 1, "from_number": "+13105550400", "to_number": "+14155551234"})
			require.Equal(t, 503, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "telephony")
		})
	})
}
