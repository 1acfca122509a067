// Package issues serves issue reports (spec 2.10, 4.10, 4.14): filed by
// users on a call, or by grading (control/grading) from a grade's
// findings; listed with filters and severity ordering; status set one by
// one or in bulk.
package issues

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Store is what the routes use (storage.IssueStore).
type Store interface {
	FileIssueReport(ctx context.Context, orgID int64, r storage.IssueReport) (storage.IssueReport, error)
	IssueReports(ctx context.Context, f storage.IssueFilter) ([]storage.IssueReport, int64, error)
	SetIssueStatus(ctx context.Context, orgID int64, traceID, status string) (storage.IssueReport, error)
	SetIssueStatuses(ctx context.Context, orgID int64, traceIDs []string, status string) (int64, error)
}

// Calls checks that a call is the org's (storage.CallStore).
type Calls interface {
	Call(ctx context.Context, orgID, id int64) (storage.Call, error)
}

// TestCaseLinks gives the test scenarios promoted from reports
// (control/scenarios.IssueLinks): the linked test cases of each report
// and whether they all pass. Nil means none: every report then has
// linked_test_cases [] and regression_guarded false.
type TestCaseLinks func(ctx context.Context, orgID int64, traceIDs []string) (map[string][]map[string]any, map[string]bool, error)

// Limits of the list and of bulk updates (spec section 8).
const (
	DefaultLimit = 100
	MaxLimit     = 500
	MaxBulk      = 500
)

type handlers struct {
	store Store
	calls Calls
	links TestCaseLinks
}

// Routes returns the issue report routes.
func Routes(store Store, cs Calls, links TestCaseLinks) []api.Route {
	h := &handlers{store: store, calls: cs, links: links}
	return []api.Route{
		{Method: "GET", Path: "/v1/calls/:call_id/issue-reports", Summary: "The call's issue reports", Tag: "issues", Auth: api.AuthOrg, ResSchema: "IssueReport", ResList: true, Errors: []int{404}, Handler: h.callList},
		{Method: "POST", Path: "/v1/calls/:call_id/issue-reports", Summary: "File an issue report on a call", Tag: "issues", Auth: api.AuthOrg, ReqSchema: "IssueReportInput", ResSchema: "IssueReport", ResStatus: 201, Errors: []int{400, 404}, Handler: h.file},
		{Method: "GET", Path: "/v1/issue-reports", Summary: "Issue reports: critical, warning, info, then newest first", Tag: "issues", Auth: api.AuthOrg, ResSchema: "IssueReportList", Errors: []int{400}, Handler: h.list},
		{Method: "PATCH", Path: "/v1/issue-reports", Summary: "Set the status of many issue reports", Tag: "issues", Auth: api.AuthOrg, ReqSchema: "IssueBulkInput", ResSchema: "IssueBulkUpdated", Errors: []int{400}, Handler: h.bulk},
		{Method: "PATCH", Path: "/v1/issue-reports/:trace_id", Summary: "Set an issue report's status", Tag: "issues", Auth: api.AuthOrg, ReqSchema: "IssueStatusInput", ResSchema: "IssueReport", Errors: []int{400, 404}, Handler: h.patch},
	}
}

type view struct {
	ID                int64            `json:"id"`
	TraceID           string           `json:"trace_id"`
	CallID            int64            `json:"call_id"`
	AgentID           *int64           `json:"agent_id"`
	Source            string           `json:"source"`
	Severity          string           `json:"severity"`
	Status            string           `json:"status"`
	Title             string           `json:"title"`
	Description       string           `json:"description"`
	WhatWentWrong     string           `json:"what_went_wrong"`
	SuggestedFix      string           `json:"suggested_fix"`
	TimestampSeconds  *int64           `json:"timestamp_seconds"`
	FailingTurnIndex  *int64           `json:"failing_turn_index"`
	DetectedIssueRef  *string          `json:"detected_issue_ref"`
	Metadata          json.RawMessage  `json:"metadata"`
	ReportedByID      *int64           `json:"reported_by_id"`
	LinkedTestCases   []map[string]any `json:"linked_test_cases"`
	RegressionGuarded bool             `json:"regression_guarded"`
	CreatedAt         string           `json:"created_at"`
	UpdatedAt         string           `json:"updated_at"`
}

func (h *handlers) views(ctx context.Context, orgID int64, rs []storage.IssueReport) ([]view, error) {
	var links map[string][]map[string]any
	var guarded map[string]bool
	if h.links != nil && len(rs) > 0 {
		ids := make([]string, len(rs))
		for i, r := range rs {
			ids[i] = r.TraceID
		}
		var err error
		if links, guarded, err = h.links(ctx, orgID, ids); err != nil {
			return nil, err
		}
	}
	out := make([]view, len(rs))
	for i, r := range rs {
		out[i] = view{ID: r.ID, TraceID: r.TraceID, CallID: r.CallID, AgentID: r.AgentID, Source: r.Source, Severity: r.Severity, Status: r.Status,
			Title: r.Title, Description: r.Description, WhatWentWrong: r.WhatWentWrong, SuggestedFix: r.SuggestedFix, TimestampSeconds: r.TimestampSeconds,
			FailingTurnIndex: r.FailingTurnIndex, DetectedIssueRef: r.DetectedIssueRef, Metadata: r.Metadata, ReportedByID: r.ReportedByID,
			LinkedTestCases: api.NonNil(links[r.TraceID]), RegressionGuarded: guarded[r.TraceID], CreatedAt: api.TS(r.CreatedAt), UpdatedAt: api.TS(r.UpdatedAt)}
	}
	return out, nil
}

func (h *handlers) one(c fiber.Ctx, p *storage.Principal, r storage.IssueReport) (view, error) {
	vs, err := h.views(c.Context(), p.OrgID, []storage.IssueReport{r})
	if err != nil {
		return view{}, err
	}
	return vs[0], nil
}

type fileBody struct {
	Title            *string         `json:"title"`
	Severity         *string         `json:"severity"`
	Description      *string         `json:"description"`
	TimestampSeconds *int64          `json:"timestamp_seconds"`
	FailingTurnIndex *int64          `json:"failing_turn_index"`
	Metadata         json.RawMessage `json:"metadata"`
}

// file files a user's report. severity defaults to warning.
func (h *handlers) file(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "call_id")
	if err != nil {
		return err
	}
	if _, err := h.calls.Call(c.Context(), p.OrgID, id); err != nil {
		return api.StoreErr(err)
	}
	var b fileBody
	if err := api.Decode(c, &b); err != nil {
		return err
	}
	errs := map[string][]string{}
	r := storage.IssueReport{CallID: id, Severity: "warning", Status: "open", Metadata: json.RawMessage("{}")}
	if b.Title == nil || strings.TrimSpace(*b.Title) == "" {
		errs["title"] = []string{"This field is required."}
	} else if n := utf8.RuneCountInString(*b.Title); n > 255 {
		errs["title"] = []string{"Ensure this field has no more than 255 characters."}
	} else {
		r.Title = *b.Title
	}
	if b.Severity != nil {
		if !slices.Contains(storage.IssueSeverities, *b.Severity) {
			errs["severity"] = []string{"Must be one of: info, warning, critical."}
		}
		r.Severity = *b.Severity
	}
	if b.Description != nil {
		if len(*b.Description) > 10000 {
			errs["description"] = []string{"Ensure this field has no more than 10000 characters."}
		}
		r.Description = *b.Description
	}
	if b.TimestampSeconds != nil && *b.TimestampSeconds < 0 {
		errs["timestamp_seconds"] = []string{"Must be 0 or more."}
	}
	if b.FailingTurnIndex != nil && *b.FailingTurnIndex < 0 {
		errs["failing_turn_index"] = []string{"Must be 0 or more."}
	}
	r.TimestampSeconds, r.FailingTurnIndex = b.TimestampSeconds, b.FailingTurnIndex
	if len(b.Metadata) > 0 && string(b.Metadata) != "null" {
		var m map[string]any
		if json.Unmarshal(b.Metadata, &m) != nil {
			errs["metadata"] = []string{"Must be an object."}
		} else if len(b.Metadata) > 16<<10 {
			errs["metadata"] = []string{"Must be at most 16 KiB of JSON."}
		}
		r.Metadata = b.Metadata
	}
	if len(errs) > 0 {
		return &api.Error{Status: http.StatusBadRequest, Fields: errs}
	}
	if p.UserID != 0 {
		by := p.UserID
		r.ReportedByID = &by
	}
	r, err = h.store.FileIssueReport(c.Context(), p.OrgID, r)
	if err != nil {
		return api.StoreErr(err)
	}
	v, err := h.one(c, p, r)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(v)
}

func (h *handlers) callList(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "call_id")
	if err != nil {
		return err
	}
	if _, err := h.calls.Call(c.Context(), p.OrgID, id); err != nil {
		return api.StoreErr(err)
	}
	rs, _, err := h.store.IssueReports(c.Context(), storage.IssueFilter{OrgID: p.OrgID, CallID: &id, Limit: 10000})
	if err != nil {
		return err
	}
	vs, err := h.views(c.Context(), p.OrgID, rs)
	if err != nil {
		return err
	}
	return c.JSON(vs)
}

func (h *handlers) list(c fiber.Ctx, p *storage.Principal) error {
	f := storage.IssueFilter{OrgID: p.OrgID, Limit: DefaultLimit}
	errs := map[string][]string{}
	if q := c.Query("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			errs["limit"] = []string{"Must be a positive integer."}
		}
		f.Limit = min(n, MaxLimit)
	}
	if q := c.Query("offset"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 {
			errs["offset"] = []string{"Must be an integer of 0 or more."}
		}
		f.Offset = n
	}
	for _, q := range []struct {
		name  string
		dst   **string
		allow []string
	}{{"severity", &f.Severity, storage.IssueSeverities}, {"status", &f.Status, storage.IssueStatuses}} {
		if v := c.Query(q.name); v != "" {
			if !slices.Contains(q.allow, v) {
				errs[q.name] = []string{"Must be one of: " + strings.Join(q.allow, ", ") + "."}
			}
			*q.dst = &v
		}
	}
	for _, q := range []struct {
		name string
		dst  **int64
	}{{"call_id", &f.CallID}, {"agent_id", &f.AgentID}} {
		if v := c.Query(q.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs[q.name] = []string{"Must be an integer."}
			}
			*q.dst = &n
		}
	}
	for _, q := range []struct {
		name string
		dst  **time.Time
		end  bool
	}{{"start_date", &f.From, false}, {"end_date", &f.To, true}} {
		if v := c.Query(q.name); v != "" {
			t, err := parseDate(v, q.end)
			if err != nil {
				errs[q.name] = []string{"Must be an ISO 8601 date or date-time."}
			}
			*q.dst = &t
		}
	}
	if len(errs) > 0 {
		return &api.Error{Status: http.StatusBadRequest, Fields: errs}
	}
	rs, total, err := h.store.IssueReports(c.Context(), f)
	if err != nil {
		return err
	}
	vs, err := h.views(c.Context(), p.OrgID, rs)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"results": vs, "total": total, "limit": f.Limit, "offset": f.Offset})
}

// parseDate reads an ISO 8601 date-time, or a date: the start of that day
// (UTC), or its end when end is true, so end_date=2026-01-31 includes the
// 31st.
func parseDate(s string, end bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, err
	}
	if end {
		t = t.Add(24*time.Hour - time.Millisecond)
	}
	return t, nil
}

type statusBody struct {
	Status   *string  `json:"status"`
	TraceIDs []string `json:"trace_ids"`
}

func checkStatus(s *string, errs map[string][]string) {
	if s == nil {
		errs["status"] = []string{"This field is required."}
	} else if !slices.Contains(storage.IssueStatuses, *s) {
		errs["status"] = []string{"Must be one of: open, acknowledged, resolved."}
	}
}

func (h *handlers) patch(c fiber.Ctx, p *storage.Principal) error {
	var b statusBody
	if err := api.Decode(c, &b); err != nil {
		return err
	}
	errs := map[string][]string{}
	checkStatus(b.Status, errs)
	if len(errs) > 0 {
		return &api.Error{Status: http.StatusBadRequest, Fields: errs}
	}
	r, err := h.store.SetIssueStatus(c.Context(), p.OrgID, c.Params("trace_id"), *b.Status)
	if err != nil {
		return api.StoreErr(err)
	}
	v, err := h.one(c, p, r)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (h *handlers) bulk(c fiber.Ctx, p *storage.Principal) error {
	var b statusBody
	if err := api.Decode(c, &b); err != nil {
		return err
	}
	errs := map[string][]string{}
	checkStatus(b.Status, errs)
	switch {
	case len(b.TraceIDs) == 0:
		errs["trace_ids"] = []string{"Must list 1 to 500 trace ids."}
	case len(b.TraceIDs) > MaxBulk:
		errs["trace_ids"] = []string{"Must list 1 to 500 trace ids."}
	default:
		for _, id := range b.TraceIDs {
			if !api.IsUUID(id) {
				errs["trace_ids"] = []string{"Each must be a UUID: " + strconv.Quote(id) + " is not."}
				break
			}
		}
	}
	if len(errs) > 0 {
		return &api.Error{Status: http.StatusBadRequest, Fields: errs}
	}
	ids := make([]string, len(b.TraceIDs))
	for i, id := range b.TraceIDs {
		ids[i] = strings.ToLower(id)
	}
	slices.Sort(ids)
	n, err := h.store.SetIssueStatuses(c.Context(), p.OrgID, slices.Compact(ids), *b.Status)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"updated": n})
}
