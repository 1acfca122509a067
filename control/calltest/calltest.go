// Package calltest makes realistic calls for tests of the call endpoints:
// admitted, with transcript turns, tool calls, DTMF and a recording,
// written through control.CallLog exactly as the media side writes them.
package calltest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
)

// Turn is one utterance, placed by its offsets from the call's start.
type Turn struct {
	Role        string // "user" or "assistant"
	Text        string
	At, Length  time.Duration
	Interrupted bool
}

// ToolUse is a tool call with its result, at an offset from the start.
type ToolUse struct {
	Name      string
	Arguments string // JSON
	Output    string
	At        time.Duration
}

// Spec describes the call to make. Zero fields take the defaults noted.
type Spec struct {
	// Direction is inbound (default: To must be an active number with an
	// inbound agent), test or web (OrgID and AgentID name the agent).
	Direction      string
	To, From       string
	OrgID, AgentID int64
	IsSimulation   bool
	// Start defaults to Length before now.
	Start time.Time
	// Length defaults to the end of the last turn plus one second.
	Length time.Duration
	Turns  []Turn
	Tools  []ToolUse
	DTMF   string
	// RecordAfter > 0 writes a recording that starts that long after the
	// call; Record writes one that starts with the call.
	Record      bool
	RecordAfter time.Duration
	// Status defaults to completed; Reason to caller_hangup.
	Status, Reason, Outcome string
	// InProgress leaves the call unfinished.
	InProgress bool
}

// Conversation is a short, realistic exchange with punctuation, quotes,
// commas and a line break in one utterance.
func Conversation() []Turn {
	return []Turn{
		{Role: "assistant", Text: "Hi, thanks for calling Acme Dental. How can I help?", At: 0, Length: 3 * time.Second},
		{Role: "user", Text: "Hello, I'd like to move my appointment, the one on \"Tuesday\".", At: 4 * time.Second, Length: 4 * time.Second},
		{Role: "assistant", Text: "Sure. Which day works better,\nWednesday or Thursday?", At: 9 * time.Second, Length: 3 * time.Second, Interrupted: true},
		{Role: "user", Text: "Thursday, please.", At: 12 * time.Second, Length: 1500 * time.Millisecond},
	}
}

// Make creates the call described by spec through log and returns its id.
// blobDir is the server's blob directory (recordings are written there).
func Make(t testing.TB, log *control.CallLog, blobDir string, spec Spec) int64 {
	t.Helper()
	ctx := context.Background()
	if spec.Direction == "" {
		spec.Direction = "inbound"
	}
	if spec.From == "" && spec.Direction == "inbound" {
		spec.From = "+15550001111"
	}
	if spec.Length == 0 {
		spec.Length = time.Second
		for _, tr := range spec.Turns {
			spec.Length = max(spec.Length, tr.At+tr.Length+time.Second)
		}
	}
	if spec.Start.IsZero() {
		spec.Start = time.Now().Add(-spec.Length).Truncate(time.Millisecond)
	}
	adm, err := log.Admit(ctx, calllog.AdmitRequest{Direction: spec.Direction, To: spec.To, From: spec.From, OrgID: spec.OrgID,
		AgentID: spec.AgentID, IsSimulation: spec.IsSimulation, At: spec.Start})
	if err != nil {
		t.Fatalf("calltest: admit: %v", err)
	}
	id := adm.CallID
	var events []calllog.CallEvent
	seq := 0
	next := func() string { seq++; return fmt.Sprintf("ev-%d-%d", id, seq) }
	recording := spec.Record || spec.RecordAfter > 0
	if recording {
		events = append(events, calllog.CallEvent{ID: next(), Kind: calllog.EventRecordingStarted, At: spec.Start.Add(spec.RecordAfter)})
	}
	for _, tr := range spec.Turns {
		events = append(events, calllog.CallEvent{ID: next(), Kind: calllog.EventTurn, At: spec.Start.Add(tr.At + tr.Length), Role: tr.Role,
			Text: tr.Text, Start: spec.Start.Add(tr.At), End: spec.Start.Add(tr.At + tr.Length), Interrupted: tr.Interrupted})
	}
	for i, tu := range spec.Tools {
		callID := fmt.Sprintf("call_%d", i+1)
		events = append(events,
			calllog.CallEvent{ID: next(), Kind: calllog.EventToolCall, At: spec.Start.Add(tu.At), ToolCallID: callID, ToolName: tu.Name, Arguments: json.RawMessage(tu.Arguments)},
			calllog.CallEvent{ID: next(), Kind: calllog.EventToolResult, At: spec.Start.Add(tu.At + 200*time.Millisecond), ToolCallID: callID, ToolName: tu.Name, Output: tu.Output})
	}
	if spec.DTMF != "" {
		events = append(events, calllog.CallEvent{ID: next(), Kind: calllog.EventDTMF, At: spec.Start.Add(spec.Length / 2), Digits: spec.DTMF})
	}
	if len(events) > 0 {
		if err := log.Append(ctx, id, events); err != nil {
			t.Fatalf("calltest: append: %v", err)
		}
	}
	if spec.InProgress {
		return id
	}
	end := calllog.CallEnd{Status: spec.Status, Reason: spec.Reason, Outcome: spec.Outcome, At: spec.Start.Add(spec.Length)}
	if end.Status == "" {
		end.Status = "completed"
	}
	if end.Reason == "" {
		end.Reason = "caller_hangup"
	}
	if recording {
		end.RecordingKey = fmt.Sprintf("recordings/%d/%d.wav", adm.OrgID, id)
		WriteWAV(t, filepath.Join(blobDir, filepath.FromSlash(end.RecordingKey)), time.Second)
	}
	if err := log.Finish(ctx, id, end); err != nil {
		t.Fatalf("calltest: finish: %v", err)
	}
	return id
}

// WriteWAV writes length of a 440 Hz tone as 8 kHz mono 16-bit PCM WAV.
func WriteWAV(t testing.TB, path string, length time.Duration) []byte {
	t.Helper()
	const rate = 8000
	n := int(length.Seconds() * rate)
	b := make([]byte, 44+2*n)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], 1) // mono
	binary.LittleEndian.PutUint32(b[24:], rate)
	binary.LittleEndian.PutUint32(b[28:], rate*2)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(2*n))
	for i := range n {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate))
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(v))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("calltest: %v", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatalf("calltest: %v", err)
	}
	return b
}
