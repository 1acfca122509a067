// Package grading grades finished calls: a model judge with a written
// rubric, plus facts measured from the call itself (media quality, end
// reason, tool errors), so a grade is never only an opinion. A durable
// worker grades every finished call of an agent with grading_enabled;
// POST /v1/calls/{id}/grade grades on demand. Findings become system
// issue reports (storage.GradingStore.RecordGrade).
package grading

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// Version is the rubric's version, stored as grader_version.
const Version = "rubric-1"

// rubric is the judge's written rubric.
const rubric = `You grade one finished phone call between a voice AI agent and a caller.
Judge the agent only. Use the transcript, the agent's instructions and the measured facts.
Rubric (each 0-10): task_completion (did the caller get what they needed),
accuracy (no invented facts, consistent with instructions and tool results),
instruction_following (the agent's prompt was obeyed), conversation_flow
(turn-taking, no repetition, recovered from interruptions), tone (polite, concise, spoken-style).
Outcome: "success" if the caller's goal was met, "failure" if not, "unknown" if the transcript
cannot tell, "no_conversation" if no real exchange happened.
Score: 0-100 overall. List each problem as a finding on the agent turn where it happened
(turn_index is the index in the transcript list below), severity "info", "warning" or "critical".
Answer with ONE JSON object and nothing else:
{"call_outcome": "...", "score": 0, "outcome_reasoning": "...", "summary": "...",
 "rubric_breakdown": {"task_completion": 0, "accuracy": 0, "instruction_following": 0, "conversation_flow": 0, "tone": 0},
 "detected_issues": [{"turn_index": 0, "severity": "warning", "title": "...", "what_went_wrong": "...", "suggested_fix": "..."}]}`

// Finding is one problem the grade found.
type Finding struct {
	Ref           string `json:"ref"`
	Source        string `json:"source"` // judge or measured
	TurnIndex     *int64 `json:"turn_index"`
	Severity      string `json:"severity"`
	Title         string `json:"title"`
	WhatWentWrong string `json:"what_went_wrong"`
	SuggestedFix  string `json:"suggested_fix"`
}

// Facts are measured from the call, never judged.
type Facts struct {
	EndReason       *string         `json:"end_reason"`
	Status          string          `json:"status"`
	DurationSeconds *int64          `json:"duration_seconds"`
	Turns           int             `json:"turns"`
	CallerTurns     int             `json:"caller_turns"`
	ToolCalls       int             `json:"tool_calls"`
	ToolErrors      []ToolError     `json:"tool_errors"`
	Quality         json.RawMessage `json:"quality"`
}

// ToolError is a tool call that failed.
type ToolError struct {
	TurnIndex  int    `json:"turn_index"`
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	Output     string `json:"output"`
}

type turn struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Grader grades calls. Model nil means no judge is configured.
type Grader struct {
	Model     llm.Provider
	ModelName string
	Timeout   time.Duration
}

// ErrJudge is a judge failure: the model is unreachable or its reply is
// not a valid grade. The worker retries it; Result.Failed records it.
var ErrJudge = errors.New("grading: judge failed")

// Result is a grade ready to record.
type Result struct {
	Grade  storage.CallGrade
	Issues []storage.IssueReport
}

// measure collects the facts and the transcript from the call's events.
func measure(c storage.Call, events []storage.CallEventRow) (Facts, []turn) {
	f := Facts{EndReason: c.EndReason, Status: c.Status, DurationSeconds: c.DurationSeconds, ToolErrors: []ToolError{}, Quality: c.Quality}
	if len(f.Quality) == 0 {
		f.Quality = json.RawMessage("null")
	}
	var turns []turn
	for _, e := range events {
		var d calls.EventData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		switch e.Kind {
		case "turn":
			turns = append(turns, turn{Role: d.Role, Text: d.Text})
			if d.Role == "user" && strings.TrimSpace(d.Text) != "" {
				f.CallerTurns++
			}
		case "tool_call":
			f.ToolCalls++
		case "tool_result":
			if d.IsError {
				f.ToolErrors = append(f.ToolErrors, ToolError{TurnIndex: max(len(turns)-1, 0), ToolCallID: d.ToolCallID, ToolName: d.ToolName, Output: clip(d.Output, 500)})
			}
		}
	}
	f.Turns = len(turns)
	return f, turns
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Thresholds above which measured quality becomes a finding.
const (
	lossWarnPercent  = 5.0
	deadAirWarnMS    = 10_000
	latencyWarnP95MS = 3_000
	talkOverWarnMS   = 5_000
)

// quality is the part of the call's quality object grading reads.
type quality struct {
	LossPercent     *float64 `json:"loss_percent"`
	DeadAirMS       *int64   `json:"dead_air_ms"`
	TalkOverMS      *int64   `json:"talk_over_ms"`
	ResponseLatency *struct {
		P95 int64 `json:"p95"`
	} `json:"response_latency_ms"`
}

// measuredFindings are the findings the facts alone support: failed
// tools, and media quality past the thresholds above.
func measuredFindings(f Facts) []Finding {
	var out []Finding
	var q quality
	_ = json.Unmarshal(f.Quality, &q) // null or foreign: no quality findings
	add := func(ref, title, what, fix string) {
		out = append(out, Finding{Ref: ref, Source: "measured", Severity: "warning", Title: title, WhatWentWrong: what, SuggestedFix: fix})
	}
	if q.LossPercent != nil && *q.LossPercent >= lossWarnPercent {
		add("quality:loss", "Audio loss", fmt.Sprintf("%.1f%% of the caller's audio packets were lost or late.", *q.LossPercent),
			"Check the network path or trunk between the caller and the media node.")
	}
	if q.DeadAirMS != nil && *q.DeadAirMS >= deadAirWarnMS {
		add("quality:dead_air", "Dead air", fmt.Sprintf("%.1f s of silence on both sides (gaps over 3 s).", float64(*q.DeadAirMS)/1000),
			"Shorten slow tool calls, speak a placeholder while working, or check in during silence.")
	}
	if q.TalkOverMS != nil && *q.TalkOverMS >= talkOverWarnMS {
		add("quality:talk_over", "Talk-over", fmt.Sprintf("Caller and agent spoke at once for %.1f s.", float64(*q.TalkOverMS)/1000),
			"Make the agent interruptible and its turns shorter.")
	}
	if q.ResponseLatency != nil && q.ResponseLatency.P95 >= latencyWarnP95MS {
		add("quality:latency", "Slow responses", fmt.Sprintf("95th percentile response latency was %d ms.", q.ResponseLatency.P95),
			"Use a faster model or product, or trim the prompt and tools.")
	}
	for _, te := range f.ToolErrors {
		ti := int64(te.TurnIndex)
		out = append(out, Finding{Ref: "tool_error:" + te.ToolCallID + ":" + te.ToolName, Source: "measured", TurnIndex: &ti, Severity: "warning",
			Title: "Tool " + te.ToolName + " failed", WhatWentWrong: "The tool call returned an error: " + clip(te.Output, 200),
			SuggestedFix: "Check the tool's endpoint and arguments; tell the agent what to say when the tool fails."})
	}
	return out
}

// Grade grades call c from its events. A judge failure returns ErrJudge
// (wrapped with the reason); Failed then builds the failed grade.
func (g *Grader) Grade(ctx context.Context, c storage.Call, prompt string, events []storage.CallEventRow) (Result, error) {
	facts, turns := measure(c, events)
	now := time.Now()
	grade := storage.CallGrade{CallID: c.ID, Status: "completed", GraderVersion: Version, GradedAt: &now}
	findings := measuredFindings(facts)
	breakdown := map[string]any{"measured": facts, "judge": nil, "judge_ran": false}
	switch {
	case facts.CallerTurns == 0:
		out := "no_conversation"
		grade.CallOutcome = &out
		grade.OutcomeReasoning = "The caller never spoke, so there was no conversation to judge; no judge ran."
		grade.Summary = "No conversation took place."
	case g.Model == nil:
		grade.OutcomeReasoning = "No judge ran: no grading model is configured. This grade holds the measured facts only."
		grade.Summary = fmt.Sprintf("%d turns, %d tool errors; not judged.", facts.Turns, len(facts.ToolErrors))
	default:
		v, err := g.judge(ctx, prompt, turns, facts)
		if err != nil {
			return Result{}, err
		}
		grade.GraderModel = g.ModelName
		grade.Score, grade.CallOutcome = &v.Score, &v.CallOutcome
		grade.OutcomeReasoning, grade.Summary = v.OutcomeReasoning, v.Summary
		breakdown["judge"], breakdown["judge_ran"] = v.RubricBreakdown, true
		for _, d := range v.DetectedIssues {
			ti := d.TurnIndex
			h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", d.TurnIndex, d.Severity, strings.ToLower(strings.TrimSpace(d.WhatWentWrong)))))
			findings = append(findings, Finding{Ref: "judge:" + hex.EncodeToString(h[:8]), Source: "judge", TurnIndex: &ti, Severity: d.Severity,
				Title: d.Title, WhatWentWrong: d.WhatWentWrong, SuggestedFix: d.SuggestedFix})
		}
	}
	if findings == nil {
		findings = []Finding{}
	}
	var err error
	if grade.RubricBreakdown, err = json.Marshal(breakdown); err != nil {
		return Result{}, err
	}
	if grade.DetectedIssues, err = json.Marshal(findings); err != nil {
		return Result{}, err
	}
	res := Result{Grade: grade}
	for _, f := range findings {
		ref := f.Ref
		title := f.Title
		if strings.TrimSpace(title) == "" {
			title = clip(f.WhatWentWrong, 120)
		}
		res.Issues = append(res.Issues, storage.IssueReport{Severity: f.Severity, Title: clip(title, 255), WhatWentWrong: f.WhatWentWrong,
			SuggestedFix: f.SuggestedFix, FailingTurnIndex: f.TurnIndex, DetectedIssueRef: &ref,
			Metadata: json.RawMessage(fmt.Sprintf(`{"finding_source":%q,"grader_version":%q}`, f.Source, Version))})
	}
	return res, nil
}

// Failed is the failed grade of call c after a judge failure err.
func (g *Grader) Failed(c storage.Call, err error) storage.CallGrade {
	now := time.Now()
	return storage.CallGrade{CallID: c.ID, Status: "failed", GraderModel: g.ModelName, GraderVersion: Version, GradedAt: &now,
		OutcomeReasoning: "Grading failed: " + err.Error(), Summary: "The judge did not produce a valid grade."}
}

// verdict is the judge's reply, validated strictly.
type verdict struct {
	CallOutcome      string           `json:"call_outcome"`
	Score            int64            `json:"score"`
	OutcomeReasoning string           `json:"outcome_reasoning"`
	Summary          string           `json:"summary"`
	RubricBreakdown  map[string]int64 `json:"rubric_breakdown"`
	DetectedIssues   []struct {
		TurnIndex     int64  `json:"turn_index"`
		Severity      string `json:"severity"`
		Title         string `json:"title"`
		WhatWentWrong string `json:"what_went_wrong"`
		SuggestedFix  string `json:"suggested_fix"`
	} `json:"detected_issues"`
}

func (g *Grader) judge(ctx context.Context, prompt string, turns []turn, facts Facts) (verdict, error) {
	tr, _ := json.Marshal(turns)
	fb, _ := json.Marshal(facts)
	user := "Agent instructions:\n" + clip(prompt, 8000) + "\n\nMeasured facts:\n" + string(fb) + "\n\nTranscript (index, role, text):\n" + string(tr)
	timeout := g.Timeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	temp := 0.0
	st, err := g.Model.Stream(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: rubric}, {Role: llm.RoleUser, Content: user}},
		Temperature: &temp, MaxTokens: 2000})
	if err != nil {
		return verdict{}, fmt.Errorf("%w: model unreachable: %v", ErrJudge, err)
	}
	defer st.Close()
	var b strings.Builder
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return verdict{}, fmt.Errorf("%w: model stream: %v", ErrJudge, err)
		}
		b.WriteString(ch.Text)
		if b.Len() > 64<<10 {
			return verdict{}, fmt.Errorf("%w: reply longer than 64 KiB", ErrJudge)
		}
	}
	return parseVerdict(b.String(), len(turns))
}

// parseVerdict validates the judge's reply: one JSON object (a fenced
// code block around it is tolerated) with every field present and in
// range; anything else is ErrJudge with the reason.
func parseVerdict(s string, nturns int) (verdict, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
	s = strings.TrimSpace(strings.TrimSuffix(s, "```"))
	bad := func(msg string) (verdict, error) {
		return verdict{}, fmt.Errorf("%w: malformed reply: %s", ErrJudge, msg)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return bad("not a JSON object")
	}
	// Each field must be present with its JSON type: null is not a
	// score, and a missing field is not a default.
	for _, f := range []struct{ name, first string }{{"call_outcome", `"`}, {"score", "0123456789-"}, {"outcome_reasoning", `"`},
		{"summary", `"`}, {"rubric_breakdown", "{"}, {"detected_issues", "["}} {
		v, ok := raw[f.name]
		if !ok {
			return bad("missing " + f.name)
		}
		if len(v) == 0 || !strings.ContainsRune(f.first, rune(v[0])) {
			return bad(f.name + " has the wrong type")
		}
	}
	var v verdict
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil {
		return bad("wrong field type: " + err.Error())
	}
	switch v.CallOutcome {
	case "success", "failure", "unknown", "no_conversation":
	default:
		return bad("call_outcome must be success, failure, unknown or no_conversation")
	}
	if v.Score < 0 || v.Score > 100 {
		return bad("score must be 0-100")
	}
	for k, x := range v.RubricBreakdown {
		if x < 0 || x > 10 {
			return bad("rubric_breakdown." + k + " must be 0-10")
		}
	}
	for i, d := range v.DetectedIssues {
		switch d.Severity {
		case "info", "warning", "critical":
		default:
			return bad(fmt.Sprintf("detected_issues[%d].severity must be info, warning or critical", i))
		}
		if d.TurnIndex < 0 || d.TurnIndex >= int64(nturns) {
			return bad(fmt.Sprintf("detected_issues[%d].turn_index out of range", i))
		}
		if strings.TrimSpace(d.WhatWentWrong) == "" {
			return bad(fmt.Sprintf("detected_issues[%d].what_went_wrong is empty", i))
		}
	}
	return v, nil
}
