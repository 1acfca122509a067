package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// CallEventRow is the stored form of one call event (the event itself,
// and the shapes of Data by Kind, are calllog.CallEvent's). Seq orders a
// call's events; EventID, when set, makes an append idempotent.
type CallEventRow struct {
	CallID  int64
	Seq     int64
	EventID string
	Kind    string
	At      time.Time
	Data    json.RawMessage
}

// AppendCallEvents appends events to call id in order, skipping any whose
// EventID the call already has (redelivery), and returns how many it
// added.
func (s *CallStore) AppendCallEvents(ctx context.Context, id int64, events []CallEventRow) (int, error) {
	added := 0
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		added = 0
		var seq int64
		// Taking the next sequence numbers locks the call row.
		err := tx.QueryRowContext(ctx, `UPDATE calls SET event_seq = event_seq WHERE id = $1 RETURNING event_seq`, id).Scan(&seq)
		if err != nil {
			return translate(err)
		}
		seen := map[string]bool{}
		for _, e := range events {
			if e.EventID != "" {
				if seen[e.EventID] {
					continue
				}
				seen[e.EventID] = true
				var one int
				err := tx.QueryRowContext(ctx, `SELECT 1 FROM call_events WHERE call_id = $1 AND event_id = $2`, id, e.EventID).Scan(&one)
				if err == nil {
					continue
				}
				if !errors.Is(err, sql.ErrNoRows) {
					return translate(err)
				}
			}
			seq++
			data := e.Data
			if len(data) == 0 {
				data = json.RawMessage("{}")
			}
			var eid any
			if e.EventID != "" {
				eid = e.EventID
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO call_events (call_id, seq, event_id, kind, at, data) VALUES ($1, $2, $3, $4, $5, $6)`,
				id, seq, eid, e.Kind, ms(e.At), string(data)); err != nil {
				return translate(err)
			}
			added++
		}
		_, err = tx.ExecContext(ctx, `UPDATE calls SET event_seq = $1 WHERE id = $2`, seq, id)
		return translate(err)
	})
	return added, err
}

// CallEvents returns the events of the given calls, by call then sequence.
// kinds, when not empty, selects event kinds.
func (s *CallStore) CallEvents(ctx context.Context, callIDs []int64, kinds ...string) ([]CallEventRow, error) {
	out := []CallEventRow{}
	for len(callIDs) > 0 {
		chunk := callIDs[:min(len(callIDs), 500)]
		callIDs = callIDs[len(chunk):]
		args := make([]any, 0, len(chunk)+len(kinds))
		for _, id := range chunk {
			args = append(args, id)
		}
		q := `SELECT call_id, seq, COALESCE(event_id, ''), kind, at, data FROM call_events WHERE call_id IN (` + placeholders(1, len(chunk)) + `)`
		if len(kinds) > 0 {
			q += ` AND kind IN (` + placeholders(len(chunk)+1, len(kinds)) + `)`
			for _, k := range kinds {
				args = append(args, k)
			}
		}
		rows, err := s.db.QueryContext(ctx, q+` ORDER BY call_id, seq`, args...)
		if err != nil {
			return nil, translate(err)
		}
		for rows.Next() {
			var e CallEventRow
			var at int64
			var data string
			if err := rows.Scan(&e.CallID, &e.Seq, &e.EventID, &e.Kind, &at, &data); err != nil {
				rows.Close()
				return nil, translate(err)
			}
			e.At, e.Data = fromMS(at), json.RawMessage(data)
			out = append(out, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err)
		}
	}
	return out, nil
}

// CallGrade is one AI grading of a call.
type CallGrade struct {
	ID               int64
	CallID           int64
	Status           string
	Score            *int64
	CallOutcome      *string
	OutcomeReasoning string
	Summary          string
	RubricBreakdown  json.RawMessage
	DetectedIssues   json.RawMessage
	GraderModel      string
	GraderVersion    string
	GradedAt         *time.Time
	CreatedAt        time.Time
}

// AddCallGrade records g for its call and mirrors status, score, outcome
// and time onto the call row, in one transaction.
func (s *CallStore) AddCallGrade(ctx context.Context, g CallGrade) (CallGrade, error) {
	now := s.nowMS()
	g.CreatedAt = fromMS(now)
	if len(g.RubricBreakdown) == 0 {
		g.RubricBreakdown = json.RawMessage("{}")
	}
	if len(g.DetectedIssues) == 0 {
		g.DetectedIssues = json.RawMessage("[]")
	}
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET grade_status = $1, grade_score = $2, call_outcome = COALESCE($3, call_outcome),
			grade_updated_at = $4, updated_at = $4 WHERE id = $5`, g.Status, nullInt(g.Score), nullStr(g.CallOutcome), now, g.CallID)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return translate(tx.QueryRowContext(ctx, `INSERT INTO call_grades (call_id, status, score, call_outcome, outcome_reasoning, summary,
			rubric_breakdown, detected_issues, grader_model, grader_version, graded_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			g.CallID, g.Status, nullInt(g.Score), nullStr(g.CallOutcome), g.OutcomeReasoning, g.Summary, string(g.RubricBreakdown),
			string(g.DetectedIssues), g.GraderModel, g.GraderVersion, nullMS(g.GradedAt), now).Scan(&g.ID))
	})
	if err != nil {
		return CallGrade{}, err
	}
	return g, nil
}

// LatestCallGrade returns the newest grade of call id of orgID.
func (s *CallStore) LatestCallGrade(ctx context.Context, orgID, id int64) (CallGrade, error) {
	var g CallGrade
	var score, graded sql.NullInt64
	var outcome sql.NullString
	var rubric, issues string
	var c int64
	err := s.db.QueryRowContext(ctx, `SELECT g.id, g.call_id, g.status, g.score, g.call_outcome, g.outcome_reasoning, g.summary,
		g.rubric_breakdown, g.detected_issues, g.grader_model, g.grader_version, g.graded_at, g.created_at
		FROM call_grades g JOIN calls c ON c.id = g.call_id
		WHERE c.org_id = $1 AND g.call_id = $2 ORDER BY g.id DESC LIMIT 1`, orgID, id).
		Scan(&g.ID, &g.CallID, &g.Status, &score, &outcome, &g.OutcomeReasoning, &g.Summary, &rubric, &issues,
			&g.GraderModel, &g.GraderVersion, &graded, &c)
	if err != nil {
		return CallGrade{}, translate(err)
	}
	if !json.Valid([]byte(rubric)) || !json.Valid([]byte(issues)) {
		return CallGrade{}, fmt.Errorf("call grade %d: stored JSON is invalid", g.ID)
	}
	g.Score, g.CallOutcome, g.GradedAt, g.CreatedAt = ptrInt(score), ptrStr(outcome), fromNullMS(graded), fromMS(c)
	g.RubricBreakdown, g.DetectedIssues = json.RawMessage(rubric), json.RawMessage(issues)
	return g, nil
}
