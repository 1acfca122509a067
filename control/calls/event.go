package calls

import (
	"encoding/json"
	"path"
	"strings"
)

// Event kinds a call records (storage.CallEventRow.Kind).
const (
	EventTurn             = "turn"
	EventToolCall         = "tool_call"
	EventToolResult       = "tool_result"
	EventDTMF             = "dtmf"
	EventTransfer         = "transfer"
	EventRecordingStarted = "recording_started"
	EventMachineDetection = "machine_detection"
	EventKnowledge        = "knowledge_retrieval"
)

// EventData is a call event's stored form (storage.CallEventRow.Data);
// times are Unix milliseconds. calllog.CallEvent says which fields each
// kind sets.
type EventData struct {
	Role        string          `json:"role,omitempty"`
	Text        string          `json:"text,omitempty"`
	Start       int64           `json:"start,omitempty"`
	End         int64           `json:"end,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
	ToolCallID  string          `json:"tool_call_id,omitempty"`
	ToolName    string          `json:"tool_name,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Output      string          `json:"output,omitempty"`
	IsError     bool            `json:"is_error,omitempty"`
	Digits      string          `json:"digits,omitempty"`
	Destination string          `json:"destination,omitempty"`
}

// ValidBlobKey accepts clean relative slash paths without ".." segments:
// the recording keys a call may report and the recording route serves.
func ValidBlobKey(k string) bool {
	return k != "" && len(k) <= 512 && !strings.HasPrefix(k, "/") && path.Clean(k) == k && k != "." &&
		!strings.HasPrefix(k, "../") && k != ".." && !strings.Contains(k, "\\")
}
