package control

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

func (s *Server) registerCallRoutes() {
	const filters = " (filters: status, direction, agent_id, number, started_after, started_before, is_simulation)"
	s.add(route{method: "GET", path: "/v1/calls", summary: "List calls, newest first; envelope {results, total, limit, offset}" + filters, tag: "calls", auth: authOrg, resSchema: "CallList", errors: []int{400}, handler: s.listCalls})
	s.add(route{method: "GET", path: "/v1/calls/export", summary: "Export up to 1000 calls with transcripts as CSV (default) or JSON (format=json)" + filters, tag: "calls", auth: authOrg, errors: []int{400}, handler: s.exportCalls})
	s.add(route{method: "GET", path: "/v1/calls/:call_id", summary: "Get a call", tag: "calls", auth: authOrg, resSchema: "Call", errors: []int{404}, handler: s.getCall})
	s.add(route{method: "GET", path: "/v1/calls/:call_id/transcript", summary: "Transcript turns; start_ms/end_ms are relative to recording_started_at (else start_time)", tag: "calls", auth: authOrg, resSchema: "Transcript", errors: []int{404}, handler: s.callTranscript})
	s.add(route{method: "GET", path: "/v1/calls/:call_id/history", summary: "Structured history: messages, tool calls and results, DTMF, transfers", tag: "calls", auth: authOrg, resSchema: "CallHistory", errors: []int{404}, handler: s.callHistory})
	s.add(route{method: "GET", path: "/v1/calls/:call_id/audio", summary: "A signed, expiring URL of the call's recording", tag: "calls", auth: authOrg, resSchema: "AudioURL", errors: []int{404}, handler: s.callAudio})
	s.add(route{method: "GET", path: "/v1/calls/:call_id/recording", summary: "The recording itself, by signed URL (expires, sig); 401 when expired or tampered", tag: "calls", resStatus: 200, errors: []int{401, 404}, raw: s.serveRecording})
	s.add(route{method: "GET", path: "/v1/calls/:call_id/grade", summary: "The call's latest AI grade", tag: "calls", auth: authOrg, resSchema: "CallGrade", errors: []int{404}, handler: s.callGrade})
	s.add(route{method: "POST", path: "/v1/call", summary: "Place an outbound call from an active VoIP number; 402 at zero balance, 503 without telephony", tag: "calls", auth: authOrg, reqSchema: "OutboundCallInput", resSchema: "Call", resStatus: 201, errors: []int{400, 402, 404, 409, 502, 503}, handler: s.placeCall})
}

// callView is the call object of spec section 2.9.
type callView struct {
	CallID              int64           `json:"call_id"`
	AgentID             *int64          `json:"agent_id"`
	AgentVariantID      *int64          `json:"agent_variant_id"`
	AgentVariantLabel   *string         `json:"agent_variant_label"`
	Direction           string          `json:"direction"`
	FromNumber          string          `json:"from_number"`
	ToNumber            string          `json:"to_number"`
	StartTime           *string         `json:"start_time"`
	EndTime             *string         `json:"end_time"`
	DurationSeconds     *int64          `json:"duration_seconds"`
	Status              string          `json:"status"`
	EndReason           *string         `json:"end_reason"`
	RecordingURL        *string         `json:"recording_url"`
	RecordingStartedAt  *string         `json:"recording_started_at"`
	IsSimulation        bool            `json:"is_simulation"`
	IsTestCall          bool            `json:"is_test_call"`
	IsScenarioCall      bool            `json:"is_scenario_call"`
	PromptSnapshot      *string         `json:"prompt_snapshot"`
	ToolSnapshot        json.RawMessage `json:"tool_snapshot"`
	WorkerExecutionName *string         `json:"worker_execution_name"`
	MediaRoomName       *string         `json:"media_room_name"`
	MediaRoomSID        *string         `json:"media_room_sid"`
	Product             *string         `json:"product"`
	Voice               *string         `json:"voice"`
	BillableMinutes     *float64        `json:"billable_minutes"`
	BillingTotalCents   *int64          `json:"billing_total_cents"`
	BilledAt            *string         `json:"billed_at"`
	GradeScore          *int64          `json:"grade_score"`
	GradeStatus         *string         `json:"grade_status"`
	GradeUpdatedAt      *string         `json:"grade_updated_at"`
	CallOutcome         *string         `json:"call_outcome"`
	IssueCount          int64           `json:"issue_count"`
	CriticalIssueCount  int64           `json:"critical_issue_count"`
	// Quality is the CallQuality stored when the call ended, or null.
	Quality json.RawMessage `json:"quality"`
}

func viewCall(c storage.Call) callView {
	start := c.StartTime
	return callView{CallID: c.ID, AgentID: c.AgentID, AgentVariantID: c.AgentVariantID, AgentVariantLabel: c.AgentVariantLabel,
		Direction: c.Direction, FromNumber: c.FromNumber, ToNumber: c.ToNumber, StartTime: tsPtr(&start), EndTime: tsPtr(c.EndTime),
		DurationSeconds: c.DurationSeconds, Status: c.Status, EndReason: c.EndReason, RecordingURL: c.RecordingURL,
		RecordingStartedAt: tsPtr(c.RecordingStartedAt), IsSimulation: c.IsSimulation, IsTestCall: c.IsSimulation,
		IsScenarioCall: c.IsScenarioCall, PromptSnapshot: c.PromptSnapshot, ToolSnapshot: c.ToolSnapshot,
		WorkerExecutionName: c.WorkerExecutionName, MediaRoomName: c.MediaRoomName, MediaRoomSID: c.MediaRoomSID,
		Product: c.Product, Voice: c.Voice, BillableMinutes: c.BillableMinutes, BillingTotalCents: c.BillingTotalCents,
		BilledAt: tsPtr(c.BilledAt), GradeScore: c.GradeScore, GradeStatus: c.GradeStatus, GradeUpdatedAt: tsPtr(c.GradeUpdatedAt),
		CallOutcome: c.CallOutcome, IssueCount: c.IssueCount, CriticalIssueCount: c.CriticalIssueCount, Quality: c.Quality}
}

// callFilter reads the list and export filters from the query string.
func callFilter(c fiber.Ctx, orgID int64, defLimit, maxLimit int) (storage.CallFilter, error) {
	f := fields{}
	cf := storage.CallFilter{OrgID: orgID}
	if v := c.Query("status"); v != "" {
		cf.Status = v
		if m := oneOf(v, []string{storage.CallInProgress, storage.CallCompleted, storage.CallFailed}); m != "" {
			f.add("status", m)
		}
	}
	if v := c.Query("direction"); v != "" {
		cf.Direction = v
		if m := oneOf(v, []string{storage.DirectionInbound, storage.DirectionOutbound, storage.DirectionTest, storage.DirectionWeb}); m != "" {
			f.add("direction", m)
		}
	}
	if v := c.Query("agent_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			f.add("agent_id", "Must be an agent id.")
		}
		cf.AgentID = &id
	}
	if v := c.Query("number"); v != "" {
		// An unescaped "+" in a query string decodes to a space.
		if strings.HasPrefix(v, " ") {
			v = "+" + strings.TrimSpace(v)
		}
		if !validE164(v) {
			f.add("number", "Must be an E.164 number like +14155550100 (escape + as %2B).")
		}
		cf.Number = v
	}
	for name, dst := range map[string]**time.Time{"started_after": &cf.StartedAfter, "started_before": &cf.StartedBefore} {
		if v := c.Query(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				f.add(name, "Must be an ISO 8601 timestamp like 2026-01-31T09:00:00Z.")
				continue
			}
			*dst = &t
		}
	}
	if v := c.Query("is_simulation"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.add("is_simulation", "Must be true or false.")
		}
		cf.IsSimulation = &b
	}
	cf.Limit = defLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			f.add("limit", "Must be an integer from 1 to "+strconv.Itoa(maxLimit)+".")
		}
		cf.Limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			f.add("offset", "Must be an integer of 0 or more.")
		}
		cf.Offset = n
	}
	return cf, f.err()
}

func (s *Server) listCalls(c fiber.Ctx, p *storage.Principal) error {
	f, err := callFilter(c, p.OrgID, 50, 500)
	if err != nil {
		return err
	}
	calls, total, err := s.store.Calls.Calls(c.Context(), f)
	if err != nil {
		return err
	}
	out := make([]callView, len(calls))
	for i, cl := range calls {
		out[i] = viewCall(cl)
	}
	return c.JSON(fiber.Map{"results": out, "total": total, "limit": f.Limit, "offset": f.Offset})
}

// orgCall loads the call named by the path in p's org.
func (s *Server) orgCall(c fiber.Ctx, p *storage.Principal) (storage.Call, error) {
	id, err := pathID(c, "call_id")
	if err != nil {
		return storage.Call{}, err
	}
	cl, err := s.store.Calls.Call(c.Context(), p.OrgID, id)
	return cl, storeErr(err)
}

func (s *Server) getCall(c fiber.Ctx, p *storage.Principal) error {
	cl, err := s.orgCall(c, p)
	if err != nil {
		return err
	}
	return c.JSON(viewCall(cl))
}

// turnView is one transcript turn. StartMS and EndMS are milliseconds
// from the anchor (recording_started_at, else start_time), never negative.
type turnView struct {
	Role        string `json:"role"`
	Text        string `json:"text"`
	StartMS     int64  `json:"start_ms"`
	EndMS       int64  `json:"end_ms"`
	Interrupted bool   `json:"interrupted"`
}

// anchor is the time transcript offsets count from.
func anchor(c storage.Call) time.Time {
	if c.RecordingStartedAt != nil {
		return *c.RecordingStartedAt
	}
	return c.StartTime
}

func relMS(t int64, anchor time.Time) int64 { return max(t-anchor.UnixMilli(), 0) }

// turns extracts the transcript of one call from its events.
func turns(c storage.Call, events []storage.CallEventRow) []turnView {
	out := []turnView{}
	a := anchor(c)
	for _, e := range events {
		if e.CallID != c.ID || e.Kind != EventTurn {
			continue
		}
		var d eventData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		out = append(out, turnView{Role: d.Role, Text: d.Text, StartMS: relMS(d.Start, a), EndMS: relMS(d.End, a), Interrupted: d.Interrupted})
	}
	return out
}

func (s *Server) callTranscript(c fiber.Ctx, p *storage.Principal) error {
	cl, err := s.orgCall(c, p)
	if err != nil {
		return err
	}
	events, err := s.store.Calls.CallEvents(c.Context(), []int64{cl.ID}, EventTurn)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"call_id": cl.ID, "recording_started_at": tsPtr(cl.RecordingStartedAt), "turns": turns(cl, events)})
}

// historyItem is one entry of a call's structured history. Type is
// message, tool_call, tool_result, dtmf, transfer, recording_started or
// machine_detection (text: the verdict, start_ms the answer, end_ms the
// verdict).
type historyItem struct {
	Type        string          `json:"type"`
	At          string          `json:"at"`
	Role        string          `json:"role,omitempty"`
	Text        *string         `json:"text,omitempty"`
	StartMS     *int64          `json:"start_ms,omitempty"`
	EndMS       *int64          `json:"end_ms,omitempty"`
	Interrupted *bool           `json:"interrupted,omitempty"`
	ToolCallID  string          `json:"tool_call_id,omitempty"`
	Name        string          `json:"name,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Output      *string         `json:"output,omitempty"`
	IsError     *bool           `json:"is_error,omitempty"`
	Digits      string          `json:"digits,omitempty"`
	Destination string          `json:"destination,omitempty"`
}

func (s *Server) callHistory(c fiber.Ctx, p *storage.Principal) error {
	cl, err := s.orgCall(c, p)
	if err != nil {
		return err
	}
	events, err := s.store.Calls.CallEvents(c.Context(), []int64{cl.ID})
	if err != nil {
		return err
	}
	a := anchor(cl)
	items := []historyItem{}
	for _, e := range events {
		var d eventData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		it := historyItem{Type: e.Kind, At: ts(e.At)}
		switch e.Kind {
		case EventTurn:
			start, end := relMS(d.Start, a), relMS(d.End, a)
			it.Type, it.Role, it.Text, it.StartMS, it.EndMS, it.Interrupted = "message", d.Role, &d.Text, &start, &end, &d.Interrupted
		case EventToolCall:
			it.ToolCallID, it.Name, it.Arguments = d.ToolCallID, d.ToolName, d.Arguments
			if len(it.Arguments) == 0 {
				it.Arguments = json.RawMessage("{}")
			}
		case EventToolResult:
			it.ToolCallID, it.Name, it.Output, it.IsError = d.ToolCallID, d.ToolName, &d.Output, &d.IsError
		case EventDTMF:
			it.Digits = d.Digits
		case EventTransfer:
			it.Destination = d.Destination
		case EventMachineDetection:
			start, end := relMS(d.Start, a), relMS(d.End, a)
			it.Text, it.StartMS, it.EndMS = &d.Text, &start, &end
		}
		items = append(items, it)
	}
	return c.JSON(fiber.Map{"call_id": cl.ID, "items": items})
}

type gradeView struct {
	ID               int64           `json:"id"`
	Status           string          `json:"status"`
	Score            *int64          `json:"score"`
	CallOutcome      *string         `json:"call_outcome"`
	OutcomeReasoning string          `json:"outcome_reasoning"`
	Summary          string          `json:"summary"`
	RubricBreakdown  json.RawMessage `json:"rubric_breakdown"`
	DetectedIssues   json.RawMessage `json:"detected_issues"`
	GraderModel      string          `json:"grader_model"`
	GraderVersion    string          `json:"grader_version"`
	GradedAt         *string         `json:"graded_at"`
}

func (s *Server) callGrade(c fiber.Ctx, p *storage.Principal) error {
	cl, err := s.orgCall(c, p)
	if err != nil {
		return err
	}
	g, err := s.store.Calls.LatestCallGrade(c.Context(), p.OrgID, cl.ID)
	if err != nil {
		if err = storeErr(err); err == errNotFound {
			return apiErr(http.StatusNotFound, "This call has not been graded.")
		}
		return err
	}
	return c.JSON(gradeView{ID: g.ID, Status: g.Status, Score: g.Score, CallOutcome: g.CallOutcome, OutcomeReasoning: g.OutcomeReasoning,
		Summary: g.Summary, RubricBreakdown: g.RubricBreakdown, DetectedIssues: g.DetectedIssues, GraderModel: g.GraderModel,
		GraderVersion: g.GraderVersion, GradedAt: tsPtr(g.GradedAt)})
}
