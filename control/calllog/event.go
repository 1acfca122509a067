package calllog

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// eventData is a CallEvent's stored form; times are Unix milliseconds.
type eventData = calls.EventData

var dtmfRe = regexp.MustCompile(`^[0-9*#A-D]+$`)

func (e CallEvent) data() (json.RawMessage, error) {
	d := eventData{}
	bad := func(msg string) (json.RawMessage, error) {
		return nil, fmt.Errorf("%w: %s event: %s", ErrBadEvent, e.Kind, msg)
	}
	switch e.Kind {
	case EventTurn:
		if e.Role != "user" && e.Role != "assistant" {
			return bad(`role must be "user" or "assistant"`)
		}
		start, end := e.Start, e.End
		if start.IsZero() {
			start = e.At
		}
		if end.IsZero() {
			end = start
		}
		if end.Before(start) {
			return bad("end is before start")
		}
		d.Role, d.Text, d.Start, d.End, d.Interrupted = e.Role, e.Text, start.UnixMilli(), end.UnixMilli(), e.Interrupted
	case EventToolCall:
		if e.ToolName == "" {
			return bad("tool name is required")
		}
		if len(e.Arguments) > 0 && !json.Valid(e.Arguments) {
			return bad("arguments are not JSON")
		}
		d.ToolCallID, d.ToolName, d.Arguments = e.ToolCallID, e.ToolName, e.Arguments
	case EventToolResult:
		d.ToolCallID, d.ToolName, d.Output, d.IsError = e.ToolCallID, e.ToolName, e.Output, e.IsError
	case EventDTMF:
		if !dtmfRe.MatchString(e.Digits) {
			return bad("digits must be 0-9, *, #, A-D")
		}
		d.Digits = e.Digits
	case EventTransfer:
		d.Destination = e.Destination
	case EventRecordingStarted:
	case EventMachineDetection:
		if e.Text == "" || e.End.Before(e.Start) {
			return bad("a verdict and its times are required")
		}
		d.Text, d.Start, d.End = e.Text, e.Start.UnixMilli(), e.End.UnixMilli()
	case EventKnowledge:
		if e.Start.IsZero() || e.End.Before(e.Start) {
			return bad("the search's times are required")
		}
		d.Text, d.Start, d.End, d.Output, d.ToolCallID, d.ToolName = e.Text, e.Start.UnixMilli(), e.End.UnixMilli(), e.Output, e.ToolCallID, e.ToolName
	default:
		return bad("unknown kind")
	}
	return json.Marshal(d)
}

// Append records events of call callID in order. Events whose ID the call
// already has are skipped. A recording_started event also sets the call's
// recording_started_at (once).
func (l *Log[C]) Append(ctx context.Context, callID int64, events []CallEvent) error {
	rows := make([]storage.CallEventRow, len(events))
	var recStart *time.Time
	for i, e := range events {
		if e.At.IsZero() {
			e.At = time.Now()
		}
		data, err := e.data()
		if err != nil {
			return err
		}
		rows[i] = storage.CallEventRow{EventID: e.ID, Kind: e.Kind, At: e.At, Data: data}
		if e.Kind == EventRecordingStarted && recStart == nil {
			at := e.At
			recStart = &at
		}
	}
	if _, err := l.st.Calls.AppendCallEvents(ctx, callID, rows); err != nil {
		return err
	}
	if recStart != nil {
		_, _, err := l.st.Calls.UpdateCall(ctx, callID, func(c *storage.Call) error {
			if c.RecordingStartedAt == nil {
				c.RecordingStartedAt = recStart
			}
			return nil
		})
		return err
	}
	return nil
}
