package calls

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
)

// Store is what the call log routes read: calls, their events and grades.
type Store interface {
	Calls(ctx context.Context, f storage.CallFilter) ([]storage.Call, int64, error)
	Call(ctx context.Context, orgID, id int64) (storage.Call, error)
	CallEvents(ctx context.Context, callIDs []int64, kinds ...string) ([]storage.CallEventRow, error)
}

// Grades reads a call's latest grade.
type Grades interface {
	LatestCallGrade(ctx context.Context, orgID, id int64) (storage.CallGrade, error)
}

// Recordings finds a call by id alone, for signed recording links.
type Recordings interface {
	CallByID(ctx context.Context, id int64) (storage.Call, error)
}

// Config holds what the recording routes need. All fields are required;
// control fills their defaults.
type Config struct {
	// PublicURL is the externally visible base URL of signed links.
	PublicURL string
	// SignKey keys the HMAC of signed recording URLs.
	SignKey []byte
	// AudioURLTTL is how long a signed recording URL stays valid.
	AudioURLTTL time.Duration
	// BlobDir is the local blob store that holds recordings.
	BlobDir string
}

type handlers struct {
	Store
	grades Grades
	recs   Recordings
	cfg    Config
}

// Routes returns the call log routes under /v1/calls. place serves POST
// /v1/call, which admission and the dialer own; nil leaves it out.
func Routes(cfg Config, store Store, grades Grades, recs Recordings, place api.Handler) []api.Route {
	h := &handlers{Store: store, grades: grades, recs: recs, cfg: cfg}
	const filters = " (filters: status, direction, agent_id, number, started_after, started_before, is_simulation)"
	rs := []api.Route{
		{Method: "GET", Path: "/v1/calls", Summary: "List calls, newest first; envelope {results, total, limit, offset}" + filters, Tag: "calls", Auth: api.AuthOrg, ResSchema: "CallList", Errors: []int{400}, Handler: h.listCalls},
		{Method: "GET", Path: "/v1/calls/export", Summary: "Export up to 1000 calls with transcripts as CSV (default) or JSON (format=json)" + filters, Tag: "calls", Auth: api.AuthOrg, Errors: []int{400}, Handler: h.exportCalls},
		{Method: "GET", Path: "/v1/calls/:call_id", Summary: "Get a call", Tag: "calls", Auth: api.AuthOrg, ResSchema: "Call", Errors: []int{404}, Handler: h.getCall},
		{Method: "GET", Path: "/v1/calls/:call_id/transcript", Summary: "Transcript turns; start_ms/end_ms are relative to recording_started_at (else start_time)", Tag: "calls", Auth: api.AuthOrg, ResSchema: "Transcript", Errors: []int{404}, Handler: h.callTranscript},
		{Method: "GET", Path: "/v1/calls/:call_id/history", Summary: "Structured history: messages, tool calls and results, DTMF, transfers", Tag: "calls", Auth: api.AuthOrg, ResSchema: "CallHistory", Errors: []int{404}, Handler: h.callHistory},
		{Method: "GET", Path: "/v1/calls/:call_id/audio", Summary: "A signed, expiring URL of the call's recording", Tag: "calls", Auth: api.AuthOrg, ResSchema: "AudioURL", Errors: []int{404}, Handler: h.callAudio},
		{Method: "GET", Path: "/v1/calls/:call_id/recording", Summary: "The recording itself, by signed URL (expires, sig); 401 when expired or tampered", Tag: "calls", ResStatus: 200, Errors: []int{401, 404}, Raw: h.serveRecording},
		{Method: "GET", Path: "/v1/calls/:call_id/grade", Summary: "The call's latest AI grade", Tag: "calls", Auth: api.AuthOrg, ResSchema: "CallGrade", Errors: []int{404}, Handler: h.callGrade},
	}
	if place != nil {
		rs = append(rs, api.Route{Method: "POST", Path: "/v1/call", Summary: "Place an outbound call from an active VoIP number; 402 at zero balance, 503 without telephony", Tag: "calls", Auth: api.AuthOrg, ReqSchema: "OutboundCallInput", ResSchema: "Call", ResStatus: 201, Errors: []int{400, 402, 404, 409, 502, 503}, Handler: place})
	}
	return rs
}

// View is the call object of spec section 2.9.
type View struct {
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

// ViewOf is c as the API shows it.
func ViewOf(c storage.Call) View {
	start := c.StartTime
	return View{CallID: c.ID, AgentID: c.AgentID, AgentVariantID: c.AgentVariantID, AgentVariantLabel: c.AgentVariantLabel,
		Direction: c.Direction, FromNumber: c.FromNumber, ToNumber: c.ToNumber, StartTime: api.TSPtr(&start), EndTime: api.TSPtr(c.EndTime),
		DurationSeconds: c.DurationSeconds, Status: c.Status, EndReason: c.EndReason, RecordingURL: c.RecordingURL,
		RecordingStartedAt: api.TSPtr(c.RecordingStartedAt), IsSimulation: c.IsSimulation, IsTestCall: c.IsSimulation,
		IsScenarioCall: c.IsScenarioCall, PromptSnapshot: c.PromptSnapshot, ToolSnapshot: c.ToolSnapshot,
		WorkerExecutionName: c.WorkerExecutionName, MediaRoomName: c.MediaRoomName, MediaRoomSID: c.MediaRoomSID,
		Product: c.Product, Voice: c.Voice, BillableMinutes: c.BillableMinutes, BillingTotalCents: c.BillingTotalCents,
		BilledAt: api.TSPtr(c.BilledAt), GradeScore: c.GradeScore, GradeStatus: c.GradeStatus, GradeUpdatedAt: api.TSPtr(c.GradeUpdatedAt),
		CallOutcome: c.CallOutcome, IssueCount: c.IssueCount, CriticalIssueCount: c.CriticalIssueCount, Quality: c.Quality}
}

// callFilter reads the list and export filters from the query string.
func callFilter(c fiber.Ctx, orgID int64, defLimit, maxLimit int) (storage.CallFilter, error) {
	f := api.Fields{}
	cf := storage.CallFilter{OrgID: orgID}
	if v := c.Query("status"); v != "" {
		cf.Status = v
		if m := api.OneOf(v, []string{storage.CallInProgress, storage.CallCompleted, storage.CallFailed}); m != "" {
			f.Add("status", m)
		}
	}
	if v := c.Query("direction"); v != "" {
		cf.Direction = v
		if m := api.OneOf(v, []string{storage.DirectionInbound, storage.DirectionOutbound, storage.DirectionTest, storage.DirectionWeb}); m != "" {
			f.Add("direction", m)
		}
	}
	if v := c.Query("agent_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			f.Add("agent_id", "Must be an agent id.")
		}
		cf.AgentID = &id
	}
	if v := c.Query("number"); v != "" {
		// An unescaped "+" in a query string decodes to a space.
		if strings.HasPrefix(v, " ") {
			v = "+" + strings.TrimSpace(v)
		}
		if !numbers.ValidE164(v) {
			f.Add("number", "Must be an E.164 number like +14155550100 (escape + as %2B).")
		}
		cf.Number = v
	}
	for name, dst := range map[string]**time.Time{"started_after": &cf.StartedAfter, "started_before": &cf.StartedBefore} {
		if v := c.Query(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				f.Add(name, "Must be an ISO 8601 timestamp like 2026-01-31T09:00:00Z.")
				continue
			}
			*dst = &t
		}
	}
	if v := c.Query("is_simulation"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.Add("is_simulation", "Must be true or false.")
		}
		cf.IsSimulation = &b
	}
	cf.Limit = defLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			f.Add("limit", "Must be an integer from 1 to "+strconv.Itoa(maxLimit)+".")
		}
		cf.Limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			f.Add("offset", "Must be an integer of 0 or more.")
		}
		cf.Offset = n
	}
	return cf, f.Err()
}

func (h *handlers) listCalls(c fiber.Ctx, p *storage.Principal) error {
	f, err := callFilter(c, p.OrgID, 50, 500)
	if err != nil {
		return err
	}
	calls, total, err := h.Calls(c.Context(), f)
	if err != nil {
		return err
	}
	out := make([]View, len(calls))
	for i, cl := range calls {
		out[i] = ViewOf(cl)
	}
	return c.JSON(fiber.Map{"results": out, "total": total, "limit": f.Limit, "offset": f.Offset})
}

// orgCall loads the call named by the path in p's org.
func (h *handlers) orgCall(c fiber.Ctx, p *storage.Principal) (storage.Call, error) {
	id, err := api.PathID(c, "call_id")
	if err != nil {
		return storage.Call{}, err
	}
	cl, err := h.Call(c.Context(), p.OrgID, id)
	return cl, api.StoreErr(err)
}

func (h *handlers) getCall(c fiber.Ctx, p *storage.Principal) error {
	cl, err := h.orgCall(c, p)
	if err != nil {
		return err
	}
	return c.JSON(ViewOf(cl))
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
		var d EventData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		out = append(out, turnView{Role: d.Role, Text: d.Text, StartMS: relMS(d.Start, a), EndMS: relMS(d.End, a), Interrupted: d.Interrupted})
	}
	return out
}

func (h *handlers) callTranscript(c fiber.Ctx, p *storage.Principal) error {
	cl, err := h.orgCall(c, p)
	if err != nil {
		return err
	}
	events, err := h.CallEvents(c.Context(), []int64{cl.ID}, EventTurn)
	if err != nil {
		return err
	}
	return c.JSON(TranscriptOf(cl, events))
}

// TranscriptOf is what GET /v1/calls/{id}/transcript answers for call c
// and its turn events (the MCP server's get_call_transcript too).
func TranscriptOf(c storage.Call, events []storage.CallEventRow) map[string]any {
	return map[string]any{"call_id": c.ID, "recording_started_at": api.TSPtr(c.RecordingStartedAt), "turns": turns(c, events)}
}

// historyItem is one entry of a call's structured history. Type is
// message, tool_call, tool_result, dtmf, transfer, recording_started or
// machine_detection (text: the verdict, start_ms the answer, end_ms the
// verdict) or knowledge_retrieval (text: the query, output: the passages
// the model got, latency_ms: the search's; tool_call_id and name when the
// search_knowledge_base tool ran it).
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
	LatencyMS   *int64          `json:"latency_ms,omitempty"`
}

func (h *handlers) callHistory(c fiber.Ctx, p *storage.Principal) error {
	cl, err := h.orgCall(c, p)
	if err != nil {
		return err
	}
	events, err := h.CallEvents(c.Context(), []int64{cl.ID})
	if err != nil {
		return err
	}
	a := anchor(cl)
	items := []historyItem{}
	for _, e := range events {
		var d EventData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		it := historyItem{Type: e.Kind, At: api.TS(e.At)}
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
		case EventKnowledge:
			latency := d.End - d.Start
			it.Text, it.Output, it.LatencyMS, it.ToolCallID, it.Name = &d.Text, &d.Output, &latency, d.ToolCallID, d.ToolName
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

// GradeViewOf is the API view of grade g (the AI grade object of 2.9).
func GradeViewOf(g storage.CallGrade) any {
	return gradeView{ID: g.ID, Status: g.Status, Score: g.Score, CallOutcome: g.CallOutcome, OutcomeReasoning: g.OutcomeReasoning,
		Summary: g.Summary, RubricBreakdown: g.RubricBreakdown, DetectedIssues: g.DetectedIssues, GraderModel: g.GraderModel,
		GraderVersion: g.GraderVersion, GradedAt: api.TSPtr(g.GradedAt)}
}

func (h *handlers) callGrade(c fiber.Ctx, p *storage.Principal) error {
	cl, err := h.orgCall(c, p)
	if err != nil {
		return err
	}
	g, err := h.grades.LatestCallGrade(c.Context(), p.OrgID, cl.ID)
	if err != nil {
		if err = api.StoreErr(err); err == api.ErrNotFound {
			return api.Err(http.StatusNotFound, "This call has not been graded.")
		}
		return err
	}
	return c.JSON(GradeViewOf(g))
}
