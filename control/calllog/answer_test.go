package calllog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestOutboundBilledFromAnswer: an outbound call lasts, and is billed,
// from its callee's answer, whether the live call reports the answer as
// it happens (Answered: what a media node does through the internal API)
// or only with the end (CallEnd.Answered): the ringing before it is not
// billed. The first answer recorded stands; an answer of a call that is
// not outbound is refused.
func TestOutboundBilledFromAnswer(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		l := a.Srv.CallLog()
		ctx := context.Background()
		o := a.CallOrg("+13105550470")
		get := func(id int64) storage.Call {
			c, err := a.Store.Calls.CallByID(ctx, id)
			require.NoError(t, err)
			return c
		}
		// place dials a call that was placed a minute ago (it rang since).
		place := func() (int64, time.Time) {
			r := a.Do("POST", "/v1/call", o.MembK, map[string]any{"agent_id": o.AgentID, "from_number": o.Number, "to_number": "+14155551234"})
			require.Equal(t, 201, r.Status, string(r.Body))
			id := controltest.ID(r.Obj(t))
			_, err := db.ExecContext(ctx, `UPDATE calls SET start_time = start_time - 60000 WHERE id = $1`, id)
			require.NoError(t, err)
			return id, get(id).StartTime
		}

		t.Run("the end carries the answer", func(t *testing.T) {
			id, start := place()
			end := start.Add(60 * time.Second)
			require.NoError(t, l.Finish(ctx, id, calllog.CallEnd{Status: "completed", Reason: "callee_hangup", At: end, Answered: end.Add(-20 * time.Second)}))
			c := get(id)
			require.NotNil(t, c.AnsweredAt)
			require.True(t, end.Add(-20*time.Second).Equal(*c.AnsweredAt))
			require.EqualValues(t, 20, *c.DurationSeconds, "from the answer, not the 60 s since it was placed")
			require.Equal(t, 0.25, *c.BillableMinutes)
		})

		t.Run("the answer reported as it happens stands", func(t *testing.T) {
			id, start := place()
			answered := start.Add(30 * time.Second)
			require.NoError(t, l.Answered(ctx, id, answered))
			require.True(t, answered.Equal(*get(id).AnsweredAt))
			require.NoError(t, l.Answered(ctx, id, start.Add(50*time.Second)), "a repeat is no error")
			require.True(t, answered.Equal(*get(id).AnsweredAt), "and changes nothing")
			end := start.Add(60 * time.Second)
			require.NoError(t, l.Finish(ctx, id, calllog.CallEnd{Status: "completed", Reason: "agent_end", At: end, Answered: start.Add(55 * time.Second)}))
			c := get(id)
			require.True(t, answered.Equal(*c.AnsweredAt))
			require.EqualValues(t, 30, *c.DurationSeconds)
			require.Equal(t, 0.5, *c.BillableMinutes)
			require.NoError(t, l.Answered(ctx, id, start.Add(59*time.Second)), "an answer after the end is no error")
			require.True(t, answered.Equal(*get(id).AnsweredAt), "and changes nothing")
		})

		t.Run("never answered: from its start, at no charge when failed", func(t *testing.T) {
			id, start := place()
			require.NoError(t, l.Finish(ctx, id, calllog.CallEnd{Status: "failed", Reason: "no_answer", At: start.Add(60 * time.Second)}))
			c := get(id)
			require.Nil(t, c.AnsweredAt)
			require.Zero(t, *c.BillingTotalCents)
		})

		t.Run("times from other clocks are clamped", func(t *testing.T) {
			id, start := place()
			require.NoError(t, l.Answered(ctx, id, start.Add(-time.Hour)))
			require.True(t, start.Equal(*get(id).AnsweredAt), "before the call was placed: its start")
			id, _ = place()
			before := time.Now()
			require.NoError(t, l.Answered(ctx, id, time.Now().Add(time.Hour)))
			require.WithinRange(t, *get(id).AnsweredAt, before.Add(-time.Millisecond), time.Now(), "in the future: now")
			id, start = place()
			require.NoError(t, l.Answered(ctx, id, time.Time{}))
			require.WithinRange(t, *get(id).AnsweredAt, time.Now().Add(-5*time.Second), time.Now(), "none given: now")
			id, start = place()
			require.NoError(t, l.Finish(ctx, id, calllog.CallEnd{Status: "completed", Reason: "callee_hangup", At: start.Add(10 * time.Second), Answered: start.Add(20 * time.Second)}))
			c := get(id)
			require.True(t, start.Add(10*time.Second).Equal(*c.AnsweredAt), "answered after the end: the end")
			require.Zero(t, *c.DurationSeconds)
		})

		t.Run("only outbound calls are answered by a callee", func(t *testing.T) {
			adm, err := l.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: o.Number, From: "+14155550199"})
			require.NoError(t, err)
			require.ErrorIs(t, l.Answered(ctx, adm.CallID, time.Now()), calllog.ErrBadEvent)
			require.Nil(t, get(adm.CallID).AnsweredAt)
			// An inbound call's end that carries an answer lasts from its
			// start as before.
			start := get(adm.CallID).StartTime
			require.NoError(t, l.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: start.Add(40 * time.Second),
				Answered: start.Add(30 * time.Second)}))
			c := get(adm.CallID)
			require.Nil(t, c.AnsweredAt)
			require.EqualValues(t, 40, *c.DurationSeconds)
			require.ErrorIs(t, l.Answered(ctx, 1<<40, time.Now()), storage.ErrNotFound)
		})
	})
}
