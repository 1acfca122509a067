package calllog

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// qualityJSON checks q and returns it as stored (nil for nil), with the
// fractional figures rounded to what they mean.
func qualityJSON(q *CallQuality) (json.RawMessage, error) {
	if q == nil {
		return nil, nil
	}
	c := *q
	bad := func(msg string) (json.RawMessage, error) {
		return nil, fmt.Errorf("%w: call quality: %s", ErrBadEvent, msg)
	}
	for _, v := range []*int64{c.PacketsSent, c.PacketsReceived, c.PacketsLost, c.JitterBufferDrops, c.ConcealedMS, c.DeadAirMS, c.TalkOverMS} {
		if v != nil && *v < 0 {
			return bad("counts and durations cannot be negative")
		}
	}
	for _, v := range []*float64{c.LossPercent, c.JitterMS, c.JitterMaxMS, c.RTTMS, c.MOS} {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
			return bad("figures must be finite and not negative")
		}
	}
	if c.LossPercent != nil && *c.LossPercent > 100 {
		return bad("loss_percent is at most 100")
	}
	if c.MOS != nil && (*c.MOS < 1 || *c.MOS > 4.5) {
		return bad("mos is from 1 to 4.5")
	}
	if l := c.ResponseLatencyMS; l != nil && (l.Turns <= 0 || l.P50 < 0 || l.P50 > l.P95 || l.P95 > l.Max) {
		return bad("response latency needs turns and p50 <= p95 <= max")
	}
	round := func(v *float64, places float64) *float64 {
		if v == nil {
			return nil
		}
		p := math.Pow(10, places)
		r := math.Round(*v*p) / p
		return &r
	}
	c.LossPercent, c.JitterMS, c.JitterMaxMS = round(c.LossPercent, 3), round(c.JitterMS, 2), round(c.JitterMaxMS, 2)
	c.RTTMS, c.MOS = round(c.RTTMS, 1), round(c.MOS, 2)
	return json.Marshal(c)
}

// Finish records how call callID ended. It applies once: finishing a
// finished call changes nothing and is not an error (redelivery).
func (l *Log[C]) Finish(ctx context.Context, callID int64, end CallEnd) error {
	if end.Status != storage.CallCompleted && end.Status != storage.CallFailed {
		return fmt.Errorf("%w: end status must be completed or failed", ErrBadEvent)
	}
	if end.Outcome != "" && api.OneOf(end.Outcome, []string{"success", "failure", "unknown", "no_conversation"}) != "" {
		return fmt.Errorf("%w: unknown call outcome %q", ErrBadEvent, end.Outcome)
	}
	if end.RecordingKey != "" && !calls.ValidBlobKey(end.RecordingKey) {
		return fmt.Errorf("%w: recording key %q is not a clean relative path", ErrBadEvent, end.RecordingKey)
	}
	qual, err := qualityJSON(end.Quality)
	if err != nil {
		return err
	}
	if end.At.IsZero() {
		end.At = time.Now()
	}
	_, _, err = l.st.Calls.UpdateCall(ctx, callID, func(c *storage.Call) error {
		if c.Status != storage.CallInProgress {
			return nil
		}
		at := end.At
		if at.Before(c.StartTime) {
			at = c.StartTime
		}
		if c.AnsweredAt == nil && !end.Answered.IsZero() && c.Direction == storage.DirectionOutbound {
			a := clampTime(end.Answered, c.StartTime, at)
			c.AnsweredAt = &a
		}
		// An outbound call lasts from the callee's answer: its ringing is
		// not billed.
		from := c.StartTime
		if c.AnsweredAt != nil {
			from = *c.AnsweredAt
		}
		dur := int64(math.Round(max(at.Sub(from), 0).Seconds()))
		c.Status, c.EndTime, c.DurationSeconds = end.Status, &at, &dur
		c.EndReason, c.EndDetail, c.CallOutcome = optStr(end.Reason), end.Detail, optStr(end.Outcome)
		if end.RecordingKey != "" {
			c.RecordingKey = end.RecordingKey
			u := "blob://" + end.RecordingKey
			c.RecordingURL = &u
		}
		if c.RecordingStartedAt == nil && !end.RecordingStartedAt.IsZero() {
			rs := end.RecordingStartedAt
			c.RecordingStartedAt = &rs
		}
		if qual != nil {
			c.Quality = qual
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Billing (and the completion event) once, also when this is a
	// redelivery of an end whose billing did not happen.
	return l.bill(ctx, callID)
}

// Answered records that the callee answered outbound call callID at at
// (zero: now): the call's duration, so its bill, runs from then. The
// live call reports it the moment the callee answers, so that a call
// whose media node is lost is billed from its answer, and one never
// answered not at all (Reaper). It applies once, to a call in progress:
// a repeat, or an answer reported after the end, changes nothing. A time
// before the call was placed (another host's clock) is taken as its
// start, one in the future as now. An inbound, web or test call has no
// callee to answer: ErrBadEvent.
func (l *Log[C]) Answered(ctx context.Context, callID int64, at time.Time) error {
	if now := time.Now(); at.IsZero() || at.After(now) {
		at = now
	}
	// One statement (an outbound call is answered once, on its media
	// node's word); only when it changed nothing is the call read, to
	// tell a repeat or a late report from a mistake.
	done, err := l.st.Calls.AnswerCall(ctx, callID, at)
	if err != nil || done {
		return err
	}
	c, err := l.st.Calls.CallByID(ctx, callID)
	if err != nil {
		return err
	}
	if c.Direction != storage.DirectionOutbound {
		return fmt.Errorf("%w: call %d is %s: only an outbound call is answered by its callee", ErrBadEvent, callID, c.Direction)
	}
	return nil
}

// clampTime is t within [lo, hi].
func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

// EndReasonNodeLost is the end_reason of a call whose media node
// stopped heartbeating: the control plane ended it, billed up to the
// node's last heartbeat (docs/decisions.md, "Loss of a media node").
const EndReasonNodeLost = "node_lost"

// AssignNode records node as the media node that holds call callID, a
// call the control plane placed there (an outbound dial, a browser call)
// or that a node took over (a realtime session token): if the node is
// lost, the call is ended with it. An ended call is left alone.
func (l *Log[C]) AssignNode(ctx context.Context, callID int64, node string) error {
	return l.st.Calls.SetCallNode(ctx, callID, node)
}

// Fail ends call callID, which was admitted but whose media never
// connected (the browser went away before ICE completed, or a mic-session
// token was never used): status failed with reason, zero duration and no
// charge. A call that already ended is left alone.
func (l *Log[C]) Fail(ctx context.Context, callID int64, reason, detail string) error {
	_, _, err := l.st.Calls.UpdateCall(ctx, callID, func(c *storage.Call) error {
		if c.Status != storage.CallInProgress {
			return nil
		}
		zero := int64(0)
		at := c.StartTime
		c.Status, c.EndTime, c.DurationSeconds = storage.CallFailed, &at, &zero
		c.EndReason, c.EndDetail = optStr(reason), detail
		return nil
	})
	return err
}
