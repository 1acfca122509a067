package call

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/quality"
)

// record is what a phone or browser call keeps for its record until it
// finishes: the transcript turns and tool runs the engine reports, and
// the response latency timed from its turns. The realtime door records
// as it goes (realtime.go), through the same eventOf. event runs on the
// agent's loop; the lock is taken per event, never per frame.
type record struct {
	latency quality.Latency

	mu     sync.Mutex
	events []calllog.CallEvent
	seq    int
}

// event keeps e's record, if it has one.
func (r *record) event(e agent.Event) {
	if t, ok := e.(agent.Turn); ok {
		observeTurn(&r.latency, t.Role, t.Start, t.End)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ev, ok := eventOf(e)
	if !ok {
		return
	}
	if ev.ID == "" {
		r.seq++
		ev.ID = "tool-" + strconv.Itoa(r.seq)
	}
	r.events = append(r.events, ev)
}

// take returns the events so far.
func (r *record) take() []calllog.CallEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]calllog.CallEvent(nil), r.events...)
}

// eventOf is the call event of an engine event, on every channel: a
// transcript turn with words, a tool call, a tool result, a key press. Turns carry
// their item's id (a redelivered turn is recorded once); tool events get
// theirs from the caller.
func eventOf(e agent.Event) (calllog.CallEvent, bool) {
	switch v := e.(type) {
	case agent.Turn:
		if v.Text == "" {
			return calllog.CallEvent{}, false
		}
		return calllog.CallEvent{ID: "turn-" + v.ItemID, Kind: calllog.EventTurn, Role: v.Role, Text: v.Text, At: v.End,
			Start: v.Start, End: v.End, Interrupted: v.Interrupted}, true
	case agent.ToolCalled:
		var args json.RawMessage
		if v.Arguments != "" && json.Valid([]byte(v.Arguments)) {
			args = json.RawMessage(v.Arguments)
		}
		return calllog.CallEvent{Kind: calllog.EventToolCall, ToolCallID: v.CallID, ToolName: v.Name, Arguments: args, At: v.At}, true
	case agent.ToolResult:
		return calllog.CallEvent{Kind: calllog.EventToolResult, ToolCallID: v.CallID, ToolName: v.Name, Output: v.Output,
			IsError: v.IsError, At: v.At}, true
	case agent.DTMF:
		// A key press heard in-band: the same record as an RFC 4733 or
		// SIP INFO digit on a phone call (phonemedia.go).
		return calllog.CallEvent{ID: "dtmf-" + strconv.Itoa(v.Seq), Kind: calllog.EventDTMF, At: v.At, Digits: string(v.Digit)}, true
	}
	return calllog.CallEvent{}, false
}

// recording is where a phone or browser call's recording goes (the
// realtime door keeps its own, media/realtime): the blob key the call
// record names and the file the engine writes.
type recording struct{ key, file string }

// newRecording makes the directory of call callID of org orgID under
// blobDir.
func newRecording(blobDir string, orgID, callID int64) (recording, error) {
	org := strconv.FormatInt(orgID, 10)
	dir := filepath.Join(blobDir, "recordings", org)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return recording{}, fmt.Errorf("recording dir: %w", err)
	}
	name := strconv.FormatInt(callID, 10) + ".wav"
	return recording{key: path.Join("recordings", org, name), file: filepath.Join(dir, name)}, nil
}

// ended returns the recording's key and its start (the engine's), empty
// when no file was written.
func (r recording) ended(a *agent.Session) (string, time.Time) {
	if _, err := os.Stat(r.file); err != nil {
		return "", time.Time{}
	}
	return r.key, a.Start()
}
