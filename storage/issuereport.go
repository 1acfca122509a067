package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
)

// Issue report sources, severities and statuses.
const (
	IssueUser   = "user"
	IssueSystem = "system"
)

// IssueSeverities are the severities, most severe first (the list order).
var IssueSeverities = []string{"critical", "warning", "info"}

// IssueStatuses are the statuses; any transition between them is allowed.
var IssueStatuses = []string{"open", "acknowledged", "resolved"}

func severityRank(s string) int {
	for i, v := range IssueSeverities {
		if v == s {
			return i
		}
	}
	return len(IssueSeverities)
}

// IssueStore holds issue reports.
type IssueStore struct{ *base }

// IssueReport is a problem found on a call, by a user or by grading.
type IssueReport struct {
	ID               int64
	TraceID          string
	OrgID            int64
	CallID           int64
	AgentID          *int64
	Source           string
	Severity         string
	Status           string
	Title            string
	Description      string
	WhatWentWrong    string
	SuggestedFix     string
	TimestampSeconds *int64
	FailingTurnIndex *int64
	DetectedIssueRef *string
	Metadata         json.RawMessage
	ReportedByID     *int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

const issueSelect = `SELECT id, trace_id, org_id, call_id, agent_id, source, severity, status, title, description, what_went_wrong,
	suggested_fix, timestamp_seconds, failing_turn_index, detected_issue_ref, metadata, reported_by_id, created_at, updated_at FROM issue_reports`

func scanIssue(sc interface{ Scan(...any) error }) (IssueReport, error) {
	var r IssueReport
	var agent, ts, turn, by sql.NullInt64
	var ref sql.NullString
	var meta string
	var c, u int64
	if err := sc.Scan(&r.ID, &r.TraceID, &r.OrgID, &r.CallID, &agent, &r.Source, &r.Severity, &r.Status, &r.Title, &r.Description,
		&r.WhatWentWrong, &r.SuggestedFix, &ts, &turn, &ref, &meta, &by, &c, &u); err != nil {
		return IssueReport{}, translate(err)
	}
	r.AgentID, r.TimestampSeconds, r.FailingTurnIndex, r.ReportedByID = ptrInt(agent), ptrInt(ts), ptrInt(turn), ptrInt(by)
	r.DetectedIssueRef, r.Metadata, r.CreatedAt, r.UpdatedAt = ptrStr(ref), json.RawMessage(meta), fromMS(c), fromMS(u)
	if !json.Valid(r.Metadata) {
		r.Metadata = json.RawMessage("{}")
	}
	return r, nil
}

// insertIssueTx inserts r with a new trace id. With skipDup, a report
// whose (call, detected_issue_ref) exists is not inserted and ok is false.
func insertIssueTx(ctx context.Context, tx *sql.Tx, r IssueReport, now int64, skipDup bool) (IssueReport, bool, error) {
	r.TraceID, r.CreatedAt, r.UpdatedAt = NewUUID(), fromMS(now), fromMS(now)
	if r.Status == "" {
		r.Status = "open"
	}
	if len(r.Metadata) == 0 {
		r.Metadata = json.RawMessage("{}")
	}
	q := `INSERT INTO issue_reports (trace_id, org_id, call_id, agent_id, source, severity, severity_rank, status, title, description,
		what_went_wrong, suggested_fix, timestamp_seconds, failing_turn_index, detected_issue_ref, metadata, reported_by_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18)`
	if skipDup {
		q += ` ON CONFLICT (call_id, detected_issue_ref) DO NOTHING`
	}
	rows, err := tx.QueryContext(ctx, q+` RETURNING id`, r.TraceID, r.OrgID, r.CallID, nullInt(r.AgentID), r.Source, r.Severity,
		severityRank(r.Severity), r.Status, r.Title, r.Description, r.WhatWentWrong, r.SuggestedFix, nullInt(r.TimestampSeconds),
		nullInt(r.FailingTurnIndex), nullStr(r.DetectedIssueRef), string(r.Metadata), nullInt(r.ReportedByID), now)
	if err != nil {
		return IssueReport{}, false, translate(err)
	}
	defer rows.Close()
	if !rows.Next() {
		return IssueReport{}, false, translate(rows.Err())
	}
	if err := rows.Scan(&r.ID); err != nil {
		return IssueReport{}, false, translate(err)
	}
	return r, true, translate(rows.Close())
}

// recountIssuesTx sets call id's issue_count and critical_issue_count
// from its reports.
func recountIssuesTx(ctx context.Context, tx *sql.Tx, id, now int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE calls SET
		issue_count = (SELECT COUNT(*) FROM issue_reports WHERE call_id = $1),
		critical_issue_count = (SELECT COUNT(*) FROM issue_reports WHERE call_id = $1 AND severity = 'critical'),
		updated_at = $2 WHERE id = $1`, id, now)
	return translate(err)
}

// IssueEventData is the issue.reported webhook payload of r.
func IssueEventData(r IssueReport) map[string]any {
	return map[string]any{"id": r.ID, "trace_id": r.TraceID, "call_id": r.CallID, "agent_id": r.AgentID, "source": r.Source,
		"severity": r.Severity, "status": r.Status, "title": r.Title, "description": r.Description, "what_went_wrong": r.WhatWentWrong,
		"suggested_fix": r.SuggestedFix, "failing_turn_index": r.FailingTurnIndex, "timestamp_seconds": r.TimestampSeconds,
		"detected_issue_ref": r.DetectedIssueRef, "created_at": r.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
}

func emitIssueTx(ctx context.Context, b *base, tx *sql.Tx, r IssueReport, now int64) error {
	data, err := json.Marshal(IssueEventData(r))
	if err != nil {
		return err
	}
	_, err = b.emitTx(ctx, tx, r.OrgID, "issue.reported", data, now)
	return err
}

// FileIssueReport files a user's report r on call r.CallID of orgID,
// updates the call's issue counts and emits issue.reported, in one
// transaction. ErrNotFound when the call is not orgID's.
func (s *IssueStore) FileIssueReport(ctx context.Context, orgID int64, r IssueReport) (IssueReport, error) {
	now := s.nowMS()
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		c, err := scanCall(tx.QueryRowContext(ctx, callSelect+` WHERE id = $1 AND org_id = $2`, r.CallID, orgID))
		if err != nil {
			return err
		}
		r.OrgID, r.AgentID, r.Source = orgID, c.AgentID, IssueUser
		if r, _, err = insertIssueTx(ctx, tx, r, now, false); err != nil {
			return err
		}
		if err := recountIssuesTx(ctx, tx, c.ID, now); err != nil {
			return err
		}
		return emitIssueTx(ctx, s.base, tx, r, now)
	})
	if err != nil {
		return IssueReport{}, err
	}
	return r, nil
}

// IssueFilter selects issue reports of an org; nil fields match all.
type IssueFilter struct {
	OrgID         int64
	Severity      *string
	Status        *string
	CallID        *int64
	AgentID       *int64
	From, To      *time.Time
	Limit, Offset int
}

// IssueReports lists reports matching f, critical, warning, info, then
// newest first, with the total before paging.
func (s *IssueStore) IssueReports(ctx context.Context, f IssueFilter) ([]IssueReport, int64, error) {
	where := []string{"org_id = $1"}
	args := []any{f.OrgID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+itoa(len(args))))
	}
	if f.Severity != nil {
		add("severity = ?", *f.Severity)
	}
	if f.Status != nil {
		add("status = ?", *f.Status)
	}
	if f.CallID != nil {
		add("call_id = ?", *f.CallID)
	}
	if f.AgentID != nil {
		add("agent_id = ?", *f.AgentID)
	}
	if f.From != nil {
		add("created_at >= ?", ms(*f.From))
	}
	if f.To != nil {
		add("created_at <= ?", ms(*f.To))
	}
	cond := " WHERE " + strings.Join(where, " AND ")
	var total int64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM issue_reports`+cond, args...).Scan(&total); err != nil {
		return nil, 0, translate(err)
	}
	n := len(args)
	args = append(args, f.Limit, f.Offset)
	out, err := scanAll(ctx, s.db.DB, scanIssue, issueSelect+cond+` ORDER BY severity_rank, created_at DESC, id DESC LIMIT $`+itoa(n+1)+` OFFSET $`+itoa(n+2), args...)
	return out, total, err
}

// SetIssueStatus sets the status of orgID's report traceID (any
// transition); ErrNotFound when the org has no such report.
func (s *IssueStore) SetIssueStatus(ctx context.Context, orgID int64, traceID, status string) (IssueReport, error) {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE issue_reports SET status = $1, updated_at = $2 WHERE org_id = $3 AND trace_id = $4`, status, now, orgID, traceID)
	if err != nil {
		return IssueReport{}, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return IssueReport{}, ErrNotFound
	}
	return scanIssue(s.db.QueryRowContext(ctx, issueSelect+` WHERE org_id = $1 AND trace_id = $2`, orgID, traceID))
}

// SetIssueStatuses sets the status of orgID's reports among traceIDs and
// returns how many it updated; ids the org does not have are skipped.
func (s *IssueStore) SetIssueStatuses(ctx context.Context, orgID int64, traceIDs []string, status string) (int64, error) {
	if len(traceIDs) == 0 {
		return 0, nil
	}
	args := []any{status, s.nowMS(), orgID}
	for _, id := range traceIDs {
		args = append(args, id)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE issue_reports SET status = $1, updated_at = $2 WHERE org_id = $3 AND trace_id IN (`+
		placeholders(4, len(traceIDs))+`)`, args...)
	if err != nil {
		return 0, translate(err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
