package onboarding_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/calltest"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestOnboarding(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		ctx := context.Background()
		steps := func(m map[string]any) map[string]bool {
			out := map[string]bool{}
			for k, v := range m["steps"].(map[string]any) {
				out[k] = v.(map[string]any)["completed"].(bool)
			}
			return out
		}

		t.Run("steps follow real events and never revert", func(t *testing.T) {
			w := a.World()
			r := a.Do("GET", "/v1/onboarding", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			o := r.Obj(t)
			require.Equal(t, map[string]bool{"agent": false, "billing": false, "phone": false, "call": false}, steps(o))
			require.Equal(t, false, o["all_complete"])
			require.Equal(t, false, o["dismissed"])
			require.Nil(t, o["dismissed_at"])
			require.Nil(t, o["steps"].(map[string]any)["agent"].(map[string]any)["completed_at"])

			r = a.Do("POST", "/v1/onboarding/agent-talk/skip", w.MembK, nil)
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "agent")
			ag := a.Agent(w.OwnerK, "Helper", nil)
			require.False(t, steps(a.Do("GET", "/v1/onboarding", w.MembK, nil).Obj(t))["agent"], "an agent alone is not enough")
			r = a.Do("POST", "/v1/onboarding/agent-talk/skip", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			o = r.Obj(t)
			require.True(t, steps(o)["agent"])
			require.NotNil(t, o["steps"].(map[string]any)["agent"].(map[string]any)["completed_at"])

			// First number acquired; deleting it does not undo the step.
			r = a.Do("POST", "/v1/phone-numbers", w.MembK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.Status)
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(r.Obj(t))), w.MembK, nil).Status)
			// Deleting the agent does not undo the agent step either.
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/agents/%d", controltest.ID(ag)), w.OwnerK, nil).Status)
			o = a.Do("GET", "/v1/onboarding", w.MembK, nil).Obj(t)
			require.Equal(t, map[string]bool{"agent": true, "billing": false, "phone": true, "call": false}, steps(o))

			// Billing: a top-up succeeded.
			_, err := a.Store.Billing.Post(ctx, w.Org.ID, storage.TxTopUp, 1000, "top-up", "pi_test_"+storage.NewUUID())
			require.NoError(t, err)
			// Call: a real call completed (a simulation does not count).
			ag = a.Agent(w.OwnerK, "Helper 2", nil)
			calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{Direction: "web", OrgID: w.Org.ID, AgentID: controltest.ID(ag), IsSimulation: true})
			require.False(t, steps(a.Do("GET", "/v1/onboarding", w.MembK, nil).Obj(t))["call"])
			calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{Direction: "web", OrgID: w.Org.ID, AgentID: controltest.ID(ag), Turns: calltest.Conversation()})
			o = a.Do("GET", "/v1/onboarding", w.MembK, nil).Obj(t)
			require.Equal(t, map[string]bool{"agent": true, "billing": true, "phone": true, "call": true}, steps(o))
			require.Equal(t, true, o["all_complete"])

			// Dismissal does not touch the steps.
			r = a.Do("POST", "/v1/onboarding/dismiss", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			o = r.Obj(t)
			require.Equal(t, true, o["dismissed"])
			require.NotNil(t, o["dismissed_at"])
			require.Equal(t, true, o["all_complete"])
			r = a.Do("POST", "/v1/onboarding/undismiss", w.MembK, nil)
			o = r.Obj(t)
			require.Equal(t, false, o["dismissed"])
			require.Nil(t, o["dismissed_at"])
			require.Equal(t, true, o["all_complete"])
			require.Equal(t, false, a.Do("GET", "/v1/onboarding", a.World().MembK, nil).Obj(t)["all_complete"], "per organization")
		})

		t.Run("talking to the agent completes the agent step", func(t *testing.T) {
			w := a.World()
			a.Credit(w.Org.ID, 100)
			ag := a.Agent(w.OwnerK, "Talker", nil)
			calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{Direction: "test", OrgID: w.Org.ID, AgentID: controltest.ID(ag), Turns: calltest.Conversation()})
			o := a.Do("GET", "/v1/onboarding", w.MembK, nil).Obj(t)
			require.Equal(t, map[string]bool{"agent": true, "billing": false, "phone": false, "call": false}, steps(o), "a test call is not a real call")
			// A saved payment method completes billing.
			_, err := db.ExecContext(ctx, `UPDATE billing_accounts SET default_payment_method = 'pm_test' WHERE org_id = $1`, w.Org.ID)
			require.NoError(t, err)
			require.True(t, steps(a.Do("GET", "/v1/onboarding", w.MembK, nil).Obj(t))["billing"])
			_, err = db.ExecContext(ctx, `UPDATE billing_accounts SET default_payment_method = NULL WHERE org_id = $1`, w.Org.ID)
			require.NoError(t, err)
			require.True(t, steps(a.Do("GET", "/v1/onboarding", w.MembK, nil).Obj(t))["billing"], "steps never revert")
		})
	})
}
