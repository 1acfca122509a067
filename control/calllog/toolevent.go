package calllog

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/voiced/voiced/storage"
)

// ToolEvent emits the tool webhook event of one tool run of call callID:
// telephony.tool for phone calls (inbound and outbound), web.tool for web
// calls (docs/decisions.md, "Tool webhook events"). Endpoint deliveries are
// fire-and-forget; the legacy URL already had the blocking exchange of
// webhook-routed tools and gets nothing here.
func (l *Log[C]) ToolEvent(ctx context.Context, callID int64, r ToolRun) error {
	if r.Name == "" || r.Start.IsZero() || r.End.Before(r.Start) {
		return fmt.Errorf("%w: tool event needs a name and its times", ErrBadEvent)
	}
	c, err := l.st.Calls.CallByID(ctx, callID)
	if err != nil {
		return err
	}
	typ := "telephony.tool"
	switch c.Direction {
	case storage.DirectionInbound, storage.DirectionOutbound:
	case storage.DirectionWeb:
		typ = "web.tool"
	default:
		return fmt.Errorf("%w: no tool events for %s calls", ErrBadEvent, c.Direction)
	}
	args := r.Arguments
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	var out, errMsg any
	if r.Error != "" {
		errMsg = r.Error
	} else {
		out = r.Output
	}
	const ms = "2006-01-02T15:04:05.000Z"
	_, err = l.st.Events.Emit(ctx, c.OrgID, typ, map[string]any{
		"call_id": c.ID, "agent_id": c.AgentID, "direction": c.Direction, "from_number": c.FromNumber, "to_number": c.ToNumber,
		"is_simulation": c.IsSimulation, "tool_call_id": r.ToolCallID, "name": r.Name, "arguments": args,
		"output": out, "error": errMsg, "is_error": r.Error != "",
		"started_at": r.Start.UTC().Format(ms), "ended_at": r.End.UTC().Format(ms), "duration_ms": r.End.Sub(r.Start).Milliseconds(),
	})
	return err
}
