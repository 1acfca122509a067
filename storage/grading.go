package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// GradingStore holds the durable grading queue and records grades with
// the issue reports grading files.
type GradingStore struct{ *base }

// GradeJob is a claimed grading of a finished call.
type GradeJob struct {
	CallID   int64
	OrgID    int64
	Attempts int64
	Owner    string
}

// enqueueGradeTx queues call id of orgID for grading (once: a call
// already queued stays as it is) and shows grade_status pending on the
// call until a grade is recorded or the job is skipped.
func enqueueGradeTx(ctx context.Context, tx *sql.Tx, orgID, id, now int64) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO grade_jobs (call_id, org_id, status, next_attempt_at, created_at, updated_at)
		VALUES ($1, $2, 'pending', $3, $3, $3) ON CONFLICT (call_id) DO NOTHING`, id, orgID, now)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE calls SET grade_status = 'pending' WHERE id = $1 AND grade_status IS NULL`, id)
	return translate(err)
}

// ClaimGradeJob leases a due grading to owner until now+lease: a pending
// one whose next attempt is due, or one whose worker's lease ran out. ok
// is false when nothing is due.
func (s *GradingStore) ClaimGradeJob(ctx context.Context, owner string, lease time.Duration) (job GradeJob, ok bool, err error) {
	now := s.nowMS()
	for range 5 {
		var id int64
		err := s.db.QueryRowContext(ctx, `SELECT call_id FROM grade_jobs
			WHERE (status = 'pending' AND next_attempt_at <= $1) OR (status = 'processing' AND lease_until < $1)
			ORDER BY next_attempt_at, call_id LIMIT 1`, now).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return GradeJob{}, false, nil
		}
		if err != nil {
			return GradeJob{}, false, translate(err)
		}
		err = s.db.QueryRowContext(ctx, `UPDATE grade_jobs SET status = 'processing', lease_owner = $2, lease_until = $3,
			attempts = attempts + 1, updated_at = $1
			WHERE call_id = $4 AND ((status = 'pending' AND next_attempt_at <= $1) OR (status = 'processing' AND lease_until < $1))
			RETURNING org_id, attempts`, now, owner, now+lease.Milliseconds(), id).Scan(&job.OrgID, &job.Attempts)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return GradeJob{}, false, translate(err)
		}
		job.CallID, job.Owner = id, owner
		return job, true, nil
	}
	return GradeJob{}, false, nil
}

// ExtendGradeLease pushes a claimed job's lease to now+lease; ErrConflict
// when the job is no longer owner's.
func (s *GradingStore) ExtendGradeLease(ctx context.Context, job GradeJob, lease time.Duration) error {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE grade_jobs SET lease_until = $1 WHERE call_id = $2 AND lease_owner = $3 AND status = 'processing'`,
		now+lease.Milliseconds(), job.CallID, job.Owner)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrConflict
	}
	return nil
}

// EndGradeJob ends a claimed job without a grade: with retryAt set it
// goes back to pending until then, otherwise it is done (skipped, or
// given up after msg) and a call still showing grade_status pending
// shows none again. ErrConflict when the job is no longer owner's.
func (s *GradingStore) EndGradeJob(ctx context.Context, job GradeJob, msg string, retryAt *time.Time) error {
	now := s.nowMS()
	status, next := "done", now
	if retryAt != nil {
		status, next = "pending", ms(*retryAt)
	}
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE grade_jobs SET status = $1, next_attempt_at = $2, last_error = $3, lease_owner = '',
			lease_until = 0, updated_at = $4 WHERE call_id = $5 AND lease_owner = $6 AND status = 'processing'`,
			status, next, msg, now, job.CallID, job.Owner)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrConflict
		}
		if retryAt != nil {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE calls SET grade_status = NULL WHERE id = $1 AND grade_status = 'pending'`, job.CallID)
		return translate(err)
	})
}

// GradeJobStatus returns a call's queue state and attempts (for tests and
// operators); ErrNotFound when it was never queued.
func (s *GradingStore) GradeJobStatus(ctx context.Context, callID int64) (status string, attempts int64, lastError string, err error) {
	err = translate(s.db.QueryRowContext(ctx, `SELECT status, attempts, last_error FROM grade_jobs WHERE call_id = $1`, callID).
		Scan(&status, &attempts, &lastError))
	return
}

// RecordGrade stores grade g of its call in one transaction: the grade,
// its status, score, outcome and time mirrored onto the call, the system
// issue reports found (one per DetectedIssueRef: those the call already
// has are left as they are), the call's issue counts, and the webhook
// events call.graded (once) and issue.reported (per new report). With
// job set, the job is marked done in the same transaction, and a job no
// longer owned by its worker (ErrConflict) writes nothing. It returns
// the grade and the reports it filed.
func (s *GradingStore) RecordGrade(ctx context.Context, job *GradeJob, g CallGrade, issues []IssueReport) (CallGrade, []IssueReport, error) {
	now := s.nowMS()
	g.CreatedAt = fromMS(now)
	if len(g.RubricBreakdown) == 0 {
		g.RubricBreakdown = json.RawMessage("{}")
	}
	if len(g.DetectedIssues) == 0 {
		g.DetectedIssues = json.RawMessage("[]")
	}
	var filed []IssueReport
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		filed = nil
		if job != nil {
			res, err := tx.ExecContext(ctx, `UPDATE grade_jobs SET status = 'done', last_error = '', lease_owner = '', lease_until = 0, updated_at = $1
				WHERE call_id = $2 AND lease_owner = $3 AND status = 'processing'`, now, job.CallID, job.Owner)
			if err != nil {
				return translate(err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return ErrConflict
			}
		}
		c, err := scanCall(tx.QueryRowContext(ctx, callSelect+` WHERE id = $1`, g.CallID))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE calls SET grade_status = $1, grade_score = $2, call_outcome = $3,
			grade_updated_at = $4, updated_at = $4 WHERE id = $5`, g.Status, nullInt(g.Score), nullStr(g.CallOutcome), now, g.CallID); err != nil {
			return translate(err)
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO call_grades (call_id, status, score, call_outcome, outcome_reasoning, summary,
			rubric_breakdown, detected_issues, grader_model, grader_version, graded_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			g.CallID, g.Status, nullInt(g.Score), nullStr(g.CallOutcome), g.OutcomeReasoning, g.Summary, string(g.RubricBreakdown),
			string(g.DetectedIssues), g.GraderModel, g.GraderVersion, nullMS(g.GradedAt), now).Scan(&g.ID); err != nil {
			return translate(err)
		}
		for _, r := range issues {
			r.OrgID, r.CallID, r.AgentID, r.Source = c.OrgID, c.ID, c.AgentID, IssueSystem
			r, ok, err := insertIssueTx(ctx, tx, r, now, true)
			if err != nil {
				return err
			}
			if ok {
				filed = append(filed, r)
			}
		}
		if err := recountIssuesTx(ctx, tx, c.ID, now); err != nil {
			return err
		}
		data, err := json.Marshal(map[string]any{"call_id": c.ID, "agent_id": c.AgentID, "grade_id": g.ID, "status": g.Status,
			"score": g.Score, "call_outcome": g.CallOutcome, "summary": g.Summary, "grader_model": g.GraderModel,
			"graded_at": tsJSON(g.GradedAt), "new_issue_count": len(filed)})
		if err != nil {
			return err
		}
		if _, err := s.emitTx(ctx, tx, c.OrgID, "call.graded", data, now); err != nil {
			return err
		}
		for _, r := range filed {
			if err := emitIssueTx(ctx, s.base, tx, r, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return CallGrade{}, nil, err
	}
	return g, filed, nil
}

func tsJSON(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
