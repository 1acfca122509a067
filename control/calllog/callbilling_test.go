package calllog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestCallCost(t *testing.T) {
	base := control.Product{Name: "storm-base", CentsPerMinute: 9}
	for _, tc := range []struct {
		d         time.Duration
		voicemail bool
		minutes   float64
		cents     int64
	}{
		{time.Second, false, 0.25, 3}, // 2.25 rounds up
		{7 * time.Second, false, 0.25, 3},
		{22 * time.Second, false, 0.25, 3},
		{23 * time.Second, false, 0.5, 5}, // 4.5 rounds up
		{60 * time.Second, false, 1, 9},
		{67 * time.Second, false, 1, 9},
		{68 * time.Second, false, 1.25, 12}, // 11.25 rounds up
		{10 * time.Minute, false, 10, 90},
		{40 * time.Second, true, 0.75, 1}, // straight to voicemail: flat cent
	} {
		got := calllog.CallCost(tc.d, base, tc.voicemail)
		require.Equal(t, storage.CallCharge{BillableMinutes: tc.minutes, TotalCents: tc.cents}, got, "%v voicemail=%v", tc.d, tc.voicemail)
	}
}

// TestMaxCallDuration checks the admission cap against the billing rule
// itself: a call of MaxCallDuration costs at most the balance, one second
// more costs more.
func TestMaxCallDuration(t *testing.T) {
	for price := int64(1); price <= 40; price++ {
		p := control.Product{Name: "p", CentsPerMinute: price}
		for bal := int64(0); bal <= 300; bal++ {
			d := calllog.MaxCallDuration(bal, p)
			if d == 0 {
				require.Greater(t, calllog.CallCost(time.Second, p, false).TotalCents, bal, "price %d balance %d: the minimum was affordable", price, bal)
				continue
			}
			require.LessOrEqual(t, calllog.CallCost(d, p, false).TotalCents, bal, "price %d balance %d: %v overdraws", price, bal, d)
			require.Greater(t, calllog.CallCost(d+time.Second, p, false).TotalCents, bal, "price %d balance %d: %v is not the longest", price, bal, d)
		}
	}
	require.Equal(t, calllog.NoLimit, calllog.MaxCallDuration(0, control.Product{Name: "free"}))
}

func TestCallBilling(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		l := a.Srv.CallLog()
		ctx := context.Background()
		org := func(credit int64) (controltest.World, int64) {
			w := a.World()
			if credit > 0 {
				a.Credit(w.Org.ID, credit)
			}
			return w, controltest.ID(a.Agent(w.OwnerK, "Billing agent", map[string]any{"prompt": "Be brief."}))
		}
		call := func(w controltest.World, agent int64, length time.Duration, reason string) int64 {
			start := time.Now().Add(-length).Truncate(time.Millisecond)
			adm, err := l.Admit(ctx, calllog.AdmitRequest{Direction: "web", OrgID: w.Org.ID, AgentID: agent, At: start})
			require.NoError(t, err)
			require.NoError(t, l.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "completed", Reason: reason, At: start.Add(length)}))
			return adm.CallID
		}

		t.Run("admission caps the call at what the balance pays for", func(t *testing.T) {
			w, agent := org(100)
			adm, err := l.Admit(ctx, calllog.AdmitRequest{Direction: "web", OrgID: w.Org.ID, AgentID: agent})
			require.NoError(t, err)
			require.Equal(t, calllog.MaxCallDuration(100, control.Product{Name: "storm-base", CentsPerMinute: 9}), adm.MaxDuration)
			require.Equal(t, 667*time.Second, adm.MaxDuration) // 44 quarters

			poor, agent2 := org(2) // a quarter minute costs 3 cents
			_, err = l.Admit(ctx, calllog.AdmitRequest{Direction: "web", OrgID: poor.Org.ID, AgentID: agent2})
			require.ErrorIs(t, err, calllog.ErrInsufficientBalance)
		})

		t.Run("failed calls cost nothing", func(t *testing.T) {
			w, agent := org(100)
			// Lasted 40 s and ended failed (never answered, or our error).
			start := time.Now().Add(-40 * time.Second).Truncate(time.Millisecond)
			adm, err := l.Admit(ctx, calllog.AdmitRequest{Direction: "web", OrgID: w.Org.ID, AgentID: agent, At: start})
			require.NoError(t, err)
			require.NoError(t, l.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "failed", Reason: "no_answer", At: start.Add(40 * time.Second)}))
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", adm.CallID), w.OwnerK, nil).Obj(t)
			require.Equal(t, float64(0), c["billing_total_cents"])
			require.Equal(t, float64(0), c["billable_minutes"])
			require.NotNil(t, c["billed_at"])
			bal, err := a.Store.Billing.Balance(ctx, w.Org.ID)
			require.NoError(t, err)
			require.Equal(t, int64(100), bal, "nothing was debited")
			// A completed call of the same length is charged.
			call(w, agent, 40*time.Second, "caller_hangup")
			bal, err = a.Store.Billing.Balance(ctx, w.Org.ID)
			require.NoError(t, err)
			require.Less(t, bal, int64(100))
		})

		t.Run("one usage entry per call however often the end arrives", func(t *testing.T) {
			w, agent := org(100)
			r := a.Do("POST", "/v1/developer/webhook-endpoints", w.AdminK, map[string]any{"label": "hooks", "url": "https://hooks.example/x", "events": []string{"web.incoming", "web.complete"}})
			require.Equal(t, 201, r.Status, string(r.Body))
			ep := r.Obj(t)["id"].(string)

			cid := call(w, agent, 61*time.Second, "caller_hangup")
			end := calllog.CallEnd{Status: "completed", Reason: "caller_hangup"}
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					if err := l.Finish(ctx, cid, end); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()

			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.MembK, nil).Obj(t)
			require.Equal(t, 1.0, c["billable_minutes"])
			require.Equal(t, float64(9), c["billing_total_cents"])
			require.NotNil(t, c["billed_at"])
			bal, _ := a.Store.Billing.Balance(ctx, w.Org.ID)
			require.Equal(t, int64(91), bal)
			txs, _ := a.Store.Billing.Transactions(ctx, w.Org.ID, 100, 0)
			n := 0
			for _, tx := range txs {
				if tx.Kind == storage.TxCallUsage {
					n++
					require.Equal(t, fmt.Sprint("call:", cid), tx.Reference)
					require.Equal(t, int64(-9), tx.AmountCents)
				}
			}
			require.Equal(t, 1, n)

			// Admission wrote web.incoming to the outbox with the call, and
			// the bill wrote web.complete, once.
			ds, err := a.Store.Outbox.EndpointDeliveries(ctx, ep)
			require.NoError(t, err)
			require.Len(t, ds, 2)
			in, err := a.Store.Outbox.ClaimDelivery(ctx, ds[0].ID, time.Now(), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "web.incoming", in.Type)
			require.Contains(t, string(in.Data), fmt.Sprintf(`"call_id":%d`, cid))
			o, err := a.Store.Outbox.ClaimDelivery(ctx, ds[1].ID, time.Now(), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "web.complete", o.Type)
			var data map[string]any
			require.NoError(t, json.Unmarshal(o.Data, &data))
			require.Equal(t, float64(cid), data["call_id"])
			require.Equal(t, float64(9), data["billing_total_cents"])
			require.Equal(t, float64(61), data["duration_seconds"])
		})

		t.Run("straight to voicemail bills a flat cent", func(t *testing.T) {
			w, agent := org(100)
			cid := call(w, agent, 40*time.Second, calllog.EndReasonVoicemail)
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.MembK, nil).Obj(t)
			require.Equal(t, float64(1), c["billing_total_cents"])
			bal, _ := a.Store.Billing.Balance(ctx, w.Org.ID)
			require.Equal(t, int64(99), bal)
		})

		t.Run("calls sharing a balance never drive it negative", func(t *testing.T) {
			w, agent := org(10)
			// Two calls admitted against the same 10 cents, each billed 9.
			start := time.Now().Add(-time.Minute)
			var ids []int64
			for range 2 {
				adm, err := l.Admit(ctx, calllog.AdmitRequest{Direction: "web", OrgID: w.Org.ID, AgentID: agent, At: start})
				require.NoError(t, err)
				ids = append(ids, adm.CallID)
			}
			for _, cid := range ids {
				require.NoError(t, l.Finish(ctx, cid, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: start.Add(time.Minute)}))
			}
			bal, _ := a.Store.Billing.Balance(ctx, w.Org.ID)
			require.Zero(t, bal)
			txs, _ := a.Store.Billing.Transactions(ctx, w.Org.ID, 10, 0)
			require.Equal(t, int64(-1), txs[0].AmountCents, "the second call takes what is left")
			require.True(t, strings.Contains(txs[0].Description, "8 cents uncollected"), txs[0].Description)
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", ids[1]), w.MembK, nil).Obj(t)
			require.Equal(t, float64(9), c["billing_total_cents"], "the call's price is still recorded")
		})

		t.Run("a call finished but never billed is swept", func(t *testing.T) {
			w, agent := org(100)
			start := time.Now().Add(-30 * time.Second)
			adm, err := l.Admit(ctx, calllog.AdmitRequest{Direction: "test", OrgID: w.Org.ID, AgentID: agent, At: start})
			require.NoError(t, err)
			// The process died after finishing and before billing.
			_, _, err = a.Store.Calls.UpdateCall(ctx, adm.CallID, func(c *storage.Call) error {
				end, dur := start.Add(30*time.Second), int64(30)
				c.Status, c.EndTime, c.DurationSeconds = storage.CallCompleted, &end, &dur
				return nil
			})
			require.NoError(t, err)
			n, err := l.BillUnbilled(ctx)
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, 1)
			bal, _ := a.Store.Billing.Balance(ctx, w.Org.ID)
			require.Equal(t, int64(100-5), bal, "30 s = 0.5 min at 9 c = 4.5, rounded up")
			n, err = l.BillUnbilled(ctx)
			require.NoError(t, err)
			require.Zero(t, n)
			_, err = a.Store.Calls.BillCall(ctx, adm.CallID, storage.CallCharge{BillableMinutes: 9, TotalCents: 99})
			require.NoError(t, err)
			bal, _ = a.Store.Billing.Balance(ctx, w.Org.ID)
			require.Equal(t, int64(95), bal, "billing again changes nothing")
			in, err := l.Admit(ctx, calllog.AdmitRequest{Direction: "test", OrgID: w.Org.ID, AgentID: agent})
			require.NoError(t, err)
			_, err = a.Store.Calls.BillCall(ctx, in.CallID, storage.CallCharge{TotalCents: 1})
			require.True(t, errors.Is(err, storage.ErrCallInProgress))
		})
	})
}
