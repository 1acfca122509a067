package calls

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// maxExport is the most calls one export returns (spec section 8).
const maxExport = 1000

// exportColumns are the CSV header; the last column is the transcript,
// one "role: text" line per turn.
var exportColumns = []string{"call_id", "agent_id", "direction", "from_number", "to_number", "start_time", "end_time",
	"duration_seconds", "status", "end_reason", "is_simulation", "product", "voice", "billable_minutes",
	"billing_total_cents", "grade_score", "call_outcome", "recording_started_at", "mos", "loss_percent", "jitter_ms",
	"response_latency_p95_ms", "transcript"}

// exportCalls answers GET /v1/calls/export: the calls the filters select
// (newest first, at most 1000; offset pages further), each with its
// transcript. X-Total-Count says how many matched in all.
func (h *handlers) exportCalls(c fiber.Ctx, p *storage.Principal) error {
	format := c.Query("format", "csv")
	if format != "csv" && format != "json" {
		return api.FieldErr("format", `Use "csv" or "json".`)
	}
	f, err := callFilter(c, p.OrgID, maxExport, maxExport)
	if err != nil {
		return err
	}
	ctx := c.Context()
	calls, total, err := h.Calls(ctx, f)
	if err != nil {
		return err
	}
	ids := make([]int64, len(calls))
	for i, cl := range calls {
		ids[i] = cl.ID
	}
	events, err := h.CallEvents(ctx, ids, EventTurn)
	if err != nil {
		return err
	}
	byCall := map[int64][]storage.CallEventRow{}
	for _, e := range events {
		byCall[e.CallID] = append(byCall[e.CallID], e)
	}
	c.Set("X-Total-Count", strconv.FormatInt(total, 10))
	name := "calls-" + time.Now().UTC().Format("20060102T150405Z") + "." + format
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	if format == "json" {
		type exported struct {
			View
			Transcript []turnView `json:"transcript"`
		}
		out := make([]exported, len(calls))
		for i, cl := range calls {
			out[i] = exported{View: ViewOf(cl), Transcript: turns(cl, byCall[cl.ID])}
		}
		return c.JSON(out)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(exportColumns)
	for _, cl := range calls {
		var lines []string
		for _, t := range turns(cl, byCall[cl.ID]) {
			lines = append(lines, t.Role+": "+t.Text)
		}
		v := ViewOf(cl)
		var q storedQuality
		if cl.Quality != nil {
			_ = json.Unmarshal(cl.Quality, &q)
		}
		var p95 *int64
		if q.ResponseLatencyMS != nil {
			p95 = &q.ResponseLatencyMS.P95
		}
		_ = w.Write([]string{
			strconv.FormatInt(cl.ID, 10), optInt(cl.AgentID), cl.Direction, cl.FromNumber, cl.ToNumber, deref(v.StartTime), deref(v.EndTime),
			optInt(cl.DurationSeconds), cl.Status, deref(cl.EndReason), strconv.FormatBool(cl.IsSimulation), deref(cl.Product), deref(cl.Voice),
			optFloat(cl.BillableMinutes), optInt(cl.BillingTotalCents), optInt(cl.GradeScore), deref(cl.CallOutcome),
			deref(v.RecordingStartedAt), optFloat(q.MOS), optFloat(q.LossPercent), optFloat(q.JitterMS), optInt(p95),
			strings.Join(lines, "\n"),
		})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	return c.Send(buf.Bytes())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func optInt(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func optFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// storedQuality is the part of a call's stored quality object (the
// CallQuality the call reported at its end) that the export shows.
type storedQuality struct {
	LossPercent       *float64 `json:"loss_percent"`
	JitterMS          *float64 `json:"jitter_ms"`
	MOS               *float64 `json:"mos"`
	ResponseLatencyMS *struct {
		P95 int64 `json:"p95"`
	} `json:"response_latency_ms"`
}
