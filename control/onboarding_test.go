package control_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/calltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestOnboarding(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newResAPI(t, db, testPool)
		ctx := context.Background()
		steps := func(m map[string]any) map[string]bool {
			out := map[string]bool{}
			for k, v := range m["steps"].(map[string]any) {
				out[k] = v.(map[string]any)["completed"].(bool)
			}
			return out
		}

		t.Run("steps follow real events and never revert", func(t *testing.T) {
			w := a.world()
			r := a.do("GET", "/v1/onboarding", w.membK, nil)
			require.Equal(t, 200, r.status)
			o := r.obj(t)
			require.Equal(t, map[string]bool{"agent": false, "billing": false, "phone": false, "call": false}, steps(o))
			require.Equal(t, false, o["all_complete"])
			require.Equal(t, false, o["dismissed"])
			require.Nil(t, o["dismissed_at"])
			require.Nil(t, o["steps"].(map[string]any)["agent"].(map[string]any)["completed_at"])

			r = a.do("POST", "/v1/onboarding/agent-talk/skip", w.membK, nil)
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t)["detail"], "agent")
			ag := a.agent(w.ownerK, "Helper", nil)
			require.False(t, steps(a.do("GET", "/v1/onboarding", w.membK, nil).obj(t))["agent"], "an agent alone is not enough")
			r = a.do("POST", "/v1/onboarding/agent-talk/skip", w.membK, nil)
			require.Equal(t, 200, r.status)
			o = r.obj(t)
			require.True(t, steps(o)["agent"])
			require.NotNil(t, o["steps"].(map[string]any)["agent"].(map[string]any)["completed_at"])

			// First number acquired; deleting it does not undo the step.
			r = a.do("POST", "/v1/phone-numbers", w.membK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.status)
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/phone-numbers/%d", id(r.obj(t))), w.membK, nil).status)
			// Deleting the agent does not undo the agent step either.
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/agents/%d", id(ag)), w.ownerK, nil).status)
			o = a.do("GET", "/v1/onboarding", w.membK, nil).obj(t)
			require.Equal(t, map[string]bool{"agent": true, "billing": false, "phone": true, "call": false}, steps(o))

			// Billing: a top-up succeeded.
			_, err := a.store.Billing.Post(ctx, w.org.ID, storage.TxTopUp, 1000, "top-up", "pi_test_"+storage.NewUUID())
			require.NoError(t, err)
			// Call: a real call completed (a simulation does not count).
			ag = a.agent(w.ownerK, "Helper 2", nil)
			calltest.Make(t, a.srv.CallLog(), a.blobDir, calltest.Spec{Direction: "web", OrgID: w.org.ID, AgentID: id(ag), IsSimulation: true})
			require.False(t, steps(a.do("GET", "/v1/onboarding", w.membK, nil).obj(t))["call"])
			calltest.Make(t, a.srv.CallLog(), a.blobDir, calltest.Spec{Direction: "web", OrgID: w.org.ID, AgentID: id(ag), Turns: calltest.Conversation()})
			o = a.do("GET", "/v1/onboarding", w.membK, nil).obj(t)
			require.Equal(t, map[string]bool{"agent": true, "billing": true, "phone": true, "call": true}, steps(o))
			require.Equal(t, true, o["all_complete"])

			// Dismissal does not touch the steps.
			r = a.do("POST", "/v1/onboarding/dismiss", w.membK, nil)
			require.Equal(t, 200, r.status)
			o = r.obj(t)
			require.Equal(t, true, o["dismissed"])
			require.NotNil(t, o["dismissed_at"])
			require.Equal(t, true, o["all_complete"])
			r = a.do("POST", "/v1/onboarding/undismiss", w.membK, nil)
			o = r.obj(t)
			require.Equal(t, false, o["dismissed"])
			require.Nil(t, o["dismissed_at"])
			require.Equal(t, true, o["all_complete"])
			require.Equal(t, false, a.do("GET", "/v1/onboarding", a.world().membK, nil).obj(t)["all_complete"], "per organization")
		})

		t.Run("talking to the agent completes the agent step", func(t *testing.T) {
			w := a.world()
			a.credit(w.org.ID, 100)
			ag := a.agent(w.ownerK, "Talker", nil)
			calltest.Make(t, a.srv.CallLog(), a.blobDir, calltest.Spec{Direction: "test", OrgID: w.org.ID, AgentID: id(ag), Turns: calltest.Conversation()})
			o := a.do("GET", "/v1/onboarding", w.membK, nil).obj(t)
			require.Equal(t, map[string]bool{"agent": true, "billing": false, "phone": false, "call": false}, steps(o), "a test call is not a real call")
			// A saved payment method completes billing.
			_, err := db.ExecContext(ctx, `UPDATE billing_accounts SET default_payment_method = 'pm_test' WHERE org_id = $1`, w.org.ID)
			require.NoError(t, err)
			require.True(t, steps(a.do("GET", "/v1/onboarding", w.membK, nil).obj(t))["billing"])
			_, err = db.ExecContext(ctx, `UPDATE billing_accounts SET default_payment_method = NULL WHERE org_id = $1`, w.org.ID)
			require.NoError(t, err)
			require.True(t, steps(a.do("GET", "/v1/onboarding", w.membK, nil).obj(t))["billing"], "steps never revert")
		})
	})
}
