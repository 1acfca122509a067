package calllog

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// Refusals of Log.Admit. The telephony side maps them to SIP final
// responses (unknown number 404, no agent or no balance 480); the real
// cause is kept on the call record when the org is known.
var (
	// ErrUnknownNumber means no organization holds the dialed number.
	ErrUnknownNumber = errors.New("control: the dialed number is not in service")
	// ErrNumberInactive means the number is held but not active.
	ErrNumberInactive = errors.New("control: the dialed number is not active")
	// ErrNoAgent means the number has no inbound agent.
	ErrNoAgent = errors.New("control: no agent answers this number")
	// ErrUnknownAgent means the agent does not exist in the organization.
	ErrUnknownAgent = errors.New("control: agent not found")
	// ErrInsufficientBalance means the organization's balance is zero.
	ErrInsufficientBalance = errors.New("control: insufficient balance")
	// ErrBadEvent means an event or call end is malformed.
	ErrBadEvent = errors.New("control: malformed call event")
)

// Call directions as the live call names them in an AdmitRequest; the
// same strings as the stored call's direction.
const (
	DirectionInbound  = storage.DirectionInbound
	DirectionOutbound = storage.DirectionOutbound
	DirectionTest     = storage.DirectionTest
	DirectionWeb      = storage.DirectionWeb
)

// Event kinds a call records; package calls owns their stored form.
const (
	EventTurn             = calls.EventTurn
	EventToolCall         = calls.EventToolCall
	EventToolResult       = calls.EventToolResult
	EventDTMF             = calls.EventDTMF
	EventTransfer         = calls.EventTransfer
	EventRecordingStarted = calls.EventRecordingStarted
	EventMachineDetection = calls.EventMachineDetection
	EventKnowledge        = calls.EventKnowledge
)

// AdmitRequest asks to start a call. Inbound calls name the dialed number
// (To) and the caller (From); test and web calls name the org and agent.
type AdmitRequest struct {
	Direction         string
	To, From          string
	OrgID, AgentID    int64
	AgentVariantID    *int64
	AgentVariantLabel string
	IsSimulation      bool
	IsScenarioCall    bool
	MediaRoomName     string
	MediaRoomSID      string
	WorkerExecution   string
	// At is when the call arrived; zero means now.
	At time.Time
	// NodeID is the media node that holds the call (empty: this
	// process); the internal API sets it from the node's request.
	NodeID string
}

// Admission is an admitted call: its id and the agent configuration C in
// effect for it (deployed, never the draft).
type Admission[C any] struct {
	CallID    int64
	OrgID     int64
	AgentID   int64
	Agent     C
	StartTime time.Time
	// MaxDuration is the longest the call may last: what the balance pays
	// for at the agent's product (MaxCallDuration). The media side ends
	// the call when it runs out; NoLimit for a free product.
	MaxDuration time.Duration
}

// CallEvent is one thing that happened during a call. ID, when set, is
// unique within the call and makes redelivery harmless. Which fields
// matter depends on Kind:
//   - turn: Role ("user" or "assistant"), Text, Start and End (wall clock;
//     transcripts show them relative to the recording), Interrupted (the
//     assistant was cut off; Text is what was actually played);
//   - tool_call: ToolCallID, ToolName, Arguments (JSON);
//   - tool_result: ToolCallID, ToolName, Output, IsError;
//   - dtmf: Digits; transfer: Destination;
//   - recording_started: At is when the recording's first sample was taken;
//   - machine_detection: Text is the verdict on who answered an outbound
//     call (human, machine, beep, greeting_ended, unknown), Start the
//     answer and End the verdict;
//   - knowledge_retrieval: Text is the query, Start and End bound the
//     search (its latency), Output the passages the model got;
//     ToolCallID and ToolName are the search_knowledge_base call it
//     answered, empty when it ran before a reply with the caller's turn.
type CallEvent struct {
	ID          string
	Kind        string
	At          time.Time
	Role        string
	Text        string
	Start, End  time.Time
	Interrupted bool
	ToolCallID  string
	ToolName    string
	Arguments   json.RawMessage
	Output      string
	IsError     bool
	Digits      string
	Destination string
}

// CallEnd is how a call ended. RecordingKey names the recording in the
// blob store (a relative slash-separated path such as
// "recordings/12/345.wav"); RecordingStartedAt is set unless a
// recording_started event already did.
type CallEnd struct {
	// Status is completed or failed.
	Status string
	// Reason is the public end_reason, e.g. caller_hangup, agent_end,
	// timeout, ai_transfer.
	Reason string
	// Detail is the internal cause, kept for operators.
	Detail             string
	At                 time.Time
	RecordingKey       string
	RecordingStartedAt time.Time
	// Outcome is success, failure, unknown or no_conversation, or empty.
	Outcome string
	// Quality is the call's media quality, stored with the end; nil for a
	// call that had no media.
	Quality *CallQuality
	// Answered is when the callee answered an outbound call (zero: never,
	// or not an outbound call). The live call reports it as it happens
	// (Log.Answered); the end carries it too, in case that report was
	// lost. Absent from the JSON when zero.
	Answered time.Time `json:",omitzero"`
}

// CallQuality is a call's media quality, measured by the media side over
// the whole call and stored when it ends (the call object's quality,
// docs/decisions.md "Call quality"). Durations are milliseconds. A nil
// field does not apply to the call's front door or was not measured:
// rtt_ms before any RTCP report, the packet figures of a realtime
// WebSocket session, response_latency_ms of a call in which the agent
// never answered a caller's turn.
type CallQuality struct {
	// Codec is the RTP encoding name of the caller's stream (PCMU, PCMA,
	// opus).
	Codec           *string `json:"codec"`
	PacketsSent     *int64  `json:"packets_sent"`
	PacketsReceived *int64  `json:"packets_received"`
	PacketsLost     *int64  `json:"packets_lost"`
	// LossPercent is what the listener lost: network loss plus packets
	// that arrived too late to play, of those expected.
	LossPercent *float64 `json:"loss_percent"`
	// JitterMS is the RFC 3550 interarrival jitter at the end of the call,
	// JitterMaxMS the largest seen.
	JitterMS    *float64 `json:"jitter_ms"`
	JitterMaxMS *float64 `json:"jitter_max_ms"`
	// JitterBufferDrops are packets the jitter buffer discarded: late,
	// overflowing, or dropped to shrink the delay.
	JitterBufferDrops *int64 `json:"jitter_buffer_drops"`
	// ConcealedMS is audio the receiver made up for missing packets (PLC).
	ConcealedMS *int64 `json:"concealed_ms"`
	// RTTMS is the round trip measured from RTCP reports.
	RTTMS *float64 `json:"rtt_ms"`
	// MOS is the ITU-T G.107 E-model estimate, 1 to 4.5.
	MOS *float64 `json:"mos"`
	// DeadAirMS is silence on both sides beyond 3 s; TalkOverMS time both
	// spoke at once.
	DeadAirMS  *int64 `json:"dead_air_ms"`
	TalkOverMS *int64 `json:"talk_over_ms"`
	// ResponseLatencyMS is from the end of each caller turn to the
	// agent's first audio of its answer.
	ResponseLatencyMS *ResponseLatency `json:"response_latency_ms"`
}

// ResponseLatency summarizes the agent's response latency over a call's
// answered turns, in milliseconds.
type ResponseLatency struct {
	P50   int64 `json:"p50"`
	P95   int64 `json:"p95"`
	Max   int64 `json:"max"`
	Turns int64 `json:"turns"`
}

// ToolRun is one tool call an agent made during a call and how it ended:
// the data of the call's tool webhook event.
type ToolRun struct {
	// ToolCallID is the model's id of the call; Name the tool.
	ToolCallID, Name string
	// Arguments is the model's JSON arguments ({} when it sent none or
	// invalid JSON).
	Arguments json.RawMessage
	// Output is the result the model got; Error, when set, the failure it
	// got instead.
	Output, Error string
	// Start and End bound the run.
	Start, End time.Time
}

// Trunk is the SIP trunk a call leaves through, with its clear
// credentials.
type Trunk struct {
	Host          string
	Port          int
	Transport     string
	Username      string
	Password      string
	OutboundProxy string
	Codecs        []string
}

// InboundTrunk is a number's VoIP connection as the SIP side needs it: the
// connection takes calls from its allowed addresses (IPs or CIDRs, as
// stored) and its host, and transfers of its calls dial out through it.
type InboundTrunk struct {
	Trunk
	// AllowedSources are the connection's allowed IPs and CIDRs.
	AllowedSources []string
}

func trunkOf(conn storage.VoIPConnection) Trunk {
	return Trunk{Host: conn.Host, Port: conn.Port, Transport: conn.Transport, Username: conn.Username,
		Password: conn.Password, OutboundProxy: conn.OutboundProxy, Codecs: conn.Codecs}
}
