package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// CallLog is the control plane's side of a call's record: the live call
// (package call) admits a call, appends what happens during it, and
// finishes it. It implements call's small interfaces (Admitter, Recorder,
// Finisher, TrunkLookup) in process; a media node reaches the same
// interfaces over the network. Safe for concurrent
// use; every method is idempotent under redelivery where it matters
// (events carry ids, Finish applies once).
type CallLog struct{ s *Server }

// CallLog returns the server's call log.
func (s *Server) CallLog() *CallLog { return &CallLog{s: s} }

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
}

// Admission is an admitted call: its id and the agent configuration in
// effect for it (deployed, never the draft).
type Admission struct {
	CallID    int64
	OrgID     int64
	AgentID   int64
	Agent     AgentConfig
	StartTime time.Time
	// MaxDuration is the longest the call may last: what the balance pays
	// for at the agent's product (MaxCallDuration). The media side ends
	// the call when it runs out; NoLimit for a free product.
	MaxDuration time.Duration
}

// Admit creates the call record of an arriving call after checking it may
// proceed: the number is held and active with an inbound agent (inbound),
// or the agent exists (test, web), and the balance is above zero. A
// refusal returns one of the Err* refusals; when the organization is
// known the refused call is still recorded as failed with the cause, and
// its id is returned with the error.
func (l *CallLog) Admit(ctx context.Context, r AdmitRequest) (Admission, error) {
	st := l.s.store
	c := storage.Call{Direction: r.Direction, FromNumber: r.From, ToNumber: r.To, StartTime: r.At, Status: storage.CallInProgress,
		IsSimulation: r.IsSimulation, IsScenarioCall: r.IsScenarioCall, AgentVariantID: r.AgentVariantID,
		AgentVariantLabel: optStr(r.AgentVariantLabel), MediaRoomName: optStr(r.MediaRoomName), MediaRoomSID: optStr(r.MediaRoomSID),
		WorkerExecutionName: optStr(r.WorkerExecution)}
	var refusal error
	switch r.Direction {
	case storage.DirectionInbound:
		n, err := st.Calls.PhoneNumberByE164(ctx, r.To)
		if errors.Is(err, storage.ErrNotFound) {
			return Admission{}, ErrUnknownNumber
		}
		if err != nil {
			return Admission{}, err
		}
		c.OrgID, c.PhoneNumberID = n.OrgID, &n.ID
		switch {
		case n.Status != storage.NumberActive:
			refusal = ErrNumberInactive
		case n.InboundAgentID == nil:
			refusal = ErrNoAgent
		default:
			c.AgentID = n.InboundAgentID
		}
	case storage.DirectionTest, storage.DirectionWeb:
		c.OrgID, c.AgentID = r.OrgID, &r.AgentID
		if c.FromNumber == "" {
			c.FromNumber = "internal:" + r.Direction
		}
		if c.ToNumber == "" {
			c.ToNumber = "agent:" + strconv.FormatInt(r.AgentID, 10)
		}
	default:
		return Admission{}, fmt.Errorf("%w: direction %q cannot be admitted (outbound calls start with POST /v1/call)", ErrBadEvent, r.Direction)
	}
	var cfg AgentConfig
	var adm Admission
	if refusal == nil {
		a, err := st.Agents.Agent(ctx, c.OrgID, *c.AgentID)
		switch {
		case errors.Is(err, storage.ErrNotFound) && r.Direction != storage.DirectionInbound:
			return Admission{}, ErrUnknownAgent
		case errors.Is(err, storage.ErrNotFound):
			refusal = ErrNoAgent // deleted between lookups
		case err != nil:
			return Admission{}, err
		default:
			if cfg, err = l.s.res.decodeConfig(a.Config); err != nil {
				return Admission{}, err
			}
			snapshotConfig(&c, cfg)
		}
	}
	if refusal == nil {
		bal, err := st.Billing.Balance(ctx, c.OrgID)
		if err != nil {
			return Admission{}, err
		}
		maxDur := MaxCallDuration(bal, l.s.res.product(c.Product))
		if bal <= 0 || maxDur == 0 {
			refusal = ErrInsufficientBalance
		}
		adm.MaxDuration = maxDur
	}
	if refusal != nil {
		now := time.Now()
		zero := int64(0)
		c.Status, c.EndTime, c.DurationSeconds = storage.CallFailed, &now, &zero
		c.EndReason, c.EndDetail = optStr(refusalReason(refusal)), refusal.Error()
	}
	c, err := st.Calls.CreateCall(ctx, c)
	if err != nil {
		return Admission{}, err
	}
	adm.CallID, adm.OrgID, adm.Agent, adm.StartTime = c.ID, c.OrgID, cfg, c.StartTime
	if c.AgentID != nil {
		adm.AgentID = *c.AgentID
	}
	return adm, refusal
}

func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrNumberInactive):
		return "number_inactive"
	case errors.Is(err, ErrNoAgent):
		return "no_agent"
	case errors.Is(err, ErrInsufficientBalance):
		return "insufficient_balance"
	}
	return "rejected"
}

// snapshotConfig records on c the configuration in effect at call time.
func snapshotConfig(c *storage.Call, cfg AgentConfig) {
	c.PromptSnapshot, c.Product, c.Voice = &cfg.Prompt, &cfg.Product, &cfg.Voice
	if tools, err := json.Marshal(nonNil(cfg.Tools)); err == nil {
		c.ToolSnapshot = tools
	}
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

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
func (l *CallLog) Append(ctx context.Context, callID int64, events []CallEvent) error {
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
	if _, err := l.s.store.Calls.AppendCallEvents(ctx, callID, rows); err != nil {
		return err
	}
	if recStart != nil {
		_, _, err := l.s.store.Calls.UpdateCall(ctx, callID, func(c *storage.Call) error {
			if c.RecordingStartedAt == nil {
				c.RecordingStartedAt = recStart
			}
			return nil
		})
		return err
	}
	return nil
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
func (l *CallLog) Finish(ctx context.Context, callID int64, end CallEnd) error {
	if end.Status != storage.CallCompleted && end.Status != storage.CallFailed {
		return fmt.Errorf("%w: end status must be completed or failed", ErrBadEvent)
	}
	if end.Outcome != "" && oneOf(end.Outcome, []string{"success", "failure", "unknown", "no_conversation"}) != "" {
		return fmt.Errorf("%w: unknown call outcome %q", ErrBadEvent, end.Outcome)
	}
	if end.RecordingKey != "" && !validBlobKey(end.RecordingKey) {
		return fmt.Errorf("%w: recording key %q is not a clean relative path", ErrBadEvent, end.RecordingKey)
	}
	qual, err := qualityJSON(end.Quality)
	if err != nil {
		return err
	}
	if end.At.IsZero() {
		end.At = time.Now()
	}
	_, _, err = l.s.store.Calls.UpdateCall(ctx, callID, func(c *storage.Call) error {
		if c.Status != storage.CallInProgress {
			return nil
		}
		at := end.At
		if at.Before(c.StartTime) {
			at = c.StartTime
		}
		dur := int64(math.Round(at.Sub(c.StartTime).Seconds()))
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

// validBlobKey accepts clean relative slash paths without ".." segments.
func validBlobKey(k string) bool { return calls.ValidBlobKey(k) }
