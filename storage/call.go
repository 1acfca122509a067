package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// CallStore holds calls, their events and grades, their billing and the
// realtime session tokens that admit them: what the live call reads and
// writes through the control plane. It is safe for concurrent use.
type CallStore struct{ *base }

// Call directions and statuses (spec section 2.9).
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
	DirectionTest     = "test"
	DirectionWeb      = "web"

	CallInProgress = "in_progress"
	CallCompleted  = "completed"
	CallFailed     = "failed"
)

// Call is one call's record. Nil pointers are JSON nulls in the API.
// EndDetail keeps the real cause of a refusal or failure for operators;
// RecordingKey names the recording in the blob store.
type Call struct {
	ID                  int64
	OrgID               int64
	AgentID             *int64
	AgentVariantID      *int64
	AgentVariantLabel   *string
	PhoneNumberID       *int64
	Direction           string
	FromNumber          string
	ToNumber            string
	StartTime           time.Time
	EndTime             *time.Time
	DurationSeconds     *int64
	Status              string
	EndReason           *string
	EndDetail           string
	RecordingURL        *string
	RecordingKey        string
	RecordingStartedAt  *time.Time
	IsSimulation        bool
	IsScenarioCall      bool
	PromptSnapshot      *string
	ToolSnapshot        json.RawMessage
	WorkerExecutionName *string
	MediaRoomName       *string
	MediaRoomSID        *string
	Product             *string
	Voice               *string
	BillableMinutes     *float64
	BillingTotalCents   *int64
	BilledAt            *time.Time
	GradeScore          *int64
	GradeStatus         *string
	GradeUpdatedAt      *time.Time
	CallOutcome         *string
	IssueCount          int64
	CriticalIssueCount  int64
	// Quality is the call's media quality as JSON (calllog.CallQuality),
	// nil until a call with media ends.
	Quality json.RawMessage
	// NodeID is the media node that holds the call in a scaled-out
	// deployment (nil: the all-in-one serve's own).
	NodeID *string
	// AnsweredAt is when the callee answered an outbound call (nil: not
	// answered, or not an outbound call); its duration runs from it.
	AnsweredAt *time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

const callColumns = `id, org_id, agent_id, agent_variant_id, agent_variant_label, phone_number_id, direction, from_number, to_number,
	start_time, end_time, duration_seconds, status, end_reason, end_detail, recording_url, recording_key, recording_started_at,
	is_simulation, is_scenario_call, prompt_snapshot, tool_snapshot, worker_execution_name, media_room_name, media_room_sid,
	product, voice, billable_minutes, billing_total_cents, billed_at, grade_score, grade_status, grade_updated_at, call_outcome,
	issue_count, critical_issue_count, quality, node_id, answered_at, created_at, updated_at`

const callSelect = `SELECT ` + callColumns + ` FROM calls`

func scanCall(row rowScanner) (Call, error) {
	var c Call
	var agent, variant, number, end, dur, recStart, billCents, billedAt, score, gradedAt, answered sql.NullInt64
	var variantLabel, endReason, recURL, prompt, tools, worker, room, roomSID, product, voice, gradeStatus, outcome, qual, node sql.NullString
	var minutes sql.NullFloat64
	var start, created, updated int64
	err := row.Scan(&c.ID, &c.OrgID, &agent, &variant, &variantLabel, &number, &c.Direction, &c.FromNumber, &c.ToNumber,
		&start, &end, &dur, &c.Status, &endReason, &c.EndDetail, &recURL, &c.RecordingKey, &recStart,
		&c.IsSimulation, &c.IsScenarioCall, &prompt, &tools, &worker, &room, &roomSID,
		&product, &voice, &minutes, &billCents, &billedAt, &score, &gradeStatus, &gradedAt, &outcome,
		&c.IssueCount, &c.CriticalIssueCount, &qual, &node, &answered, &created, &updated)
	if err != nil {
		return Call{}, translate(err)
	}
	c.AgentID, c.AgentVariantID, c.PhoneNumberID = ptrInt(agent), ptrInt(variant), ptrInt(number)
	c.AgentVariantLabel, c.EndReason, c.RecordingURL = ptrStr(variantLabel), ptrStr(endReason), ptrStr(recURL)
	c.PromptSnapshot, c.WorkerExecutionName, c.MediaRoomName, c.MediaRoomSID = ptrStr(prompt), ptrStr(worker), ptrStr(room), ptrStr(roomSID)
	c.Product, c.Voice, c.GradeStatus, c.CallOutcome = ptrStr(product), ptrStr(voice), ptrStr(gradeStatus), ptrStr(outcome)
	c.NodeID = ptrStr(node)
	if tools.Valid {
		c.ToolSnapshot = json.RawMessage(tools.String)
	}
	if qual.Valid {
		c.Quality = json.RawMessage(qual.String)
	}
	if minutes.Valid {
		m := minutes.Float64
		c.BillableMinutes = &m
	}
	c.StartTime, c.EndTime, c.RecordingStartedAt = fromMS(start), fromNullMS(end), fromNullMS(recStart)
	c.DurationSeconds, c.BillingTotalCents, c.GradeScore = ptrInt(dur), ptrInt(billCents), ptrInt(score)
	c.BilledAt, c.GradeUpdatedAt, c.AnsweredAt = fromNullMS(billedAt), fromNullMS(gradedAt), fromNullMS(answered)
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return c, nil
}

// callArgs returns c's column values in callColumns order, without id.
func callArgs(c Call) []any {
	var tools any
	if c.ToolSnapshot != nil {
		tools = string(c.ToolSnapshot)
	}
	var qual any
	if c.Quality != nil {
		qual = string(c.Quality)
	}
	var minutes any
	if c.BillableMinutes != nil {
		minutes = *c.BillableMinutes
	}
	return []any{c.OrgID, nullInt(c.AgentID), nullInt(c.AgentVariantID), nullStr(c.AgentVariantLabel), nullInt(c.PhoneNumberID),
		c.Direction, c.FromNumber, c.ToNumber, ms(c.StartTime), nullMS(c.EndTime), nullInt(c.DurationSeconds), c.Status,
		nullStr(c.EndReason), c.EndDetail, nullStr(c.RecordingURL), c.RecordingKey, nullMS(c.RecordingStartedAt),
		c.IsSimulation, c.IsScenarioCall, nullStr(c.PromptSnapshot), tools, nullStr(c.WorkerExecutionName),
		nullStr(c.MediaRoomName), nullStr(c.MediaRoomSID), nullStr(c.Product), nullStr(c.Voice), minutes,
		nullInt(c.BillingTotalCents), nullMS(c.BilledAt), nullInt(c.GradeScore), nullStr(c.GradeStatus),
		nullMS(c.GradeUpdatedAt), nullStr(c.CallOutcome), c.IssueCount, c.CriticalIssueCount, qual, nullStr(c.NodeID), nullMS(c.AnsweredAt),
		ms(c.CreatedAt), ms(c.UpdatedAt)}
}

// CreateCall inserts c and returns it with its id. A zero StartTime is now.
func (s *CallStore) CreateCall(ctx context.Context, c Call) (Call, error) {
	now := fromMS(s.nowMS())
	if c.StartTime.IsZero() {
		c.StartTime = now
	}
	c.StartTime = fromMS(ms(c.StartTime))
	c.CreatedAt, c.UpdatedAt = now, now
	cols := strings.TrimPrefix(callColumns, "id, ")
	args := callArgs(c)
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO calls (`+cols+`) VALUES (`+placeholders(1, len(args))+`) RETURNING id`, args...).Scan(&c.ID); err != nil {
			return translate(err)
		}
		// The admitted call's incoming webhook event, in the same transaction.
		return s.incomingEventTx(ctx, tx, c, ms(now))
	})
	if err != nil {
		return Call{}, err
	}
	return c, nil
}

// Call returns call id of orgID.
func (s *CallStore) Call(ctx context.Context, orgID, id int64) (Call, error) {
	return scanCall(s.db.QueryRowContext(ctx, callSelect+` WHERE org_id = $1 AND id = $2`, orgID, id))
}

// CallByID returns call id of any organization (the media side and
// signed URLs address calls by id alone).
func (s *CallStore) CallByID(ctx context.Context, id int64) (Call, error) {
	return scanCall(s.db.QueryRowContext(ctx, callSelect+` WHERE id = $1`, id))
}

// UpdateCall changes call id under its row lock; fn edits it and may
// return an error to abort. It reports the call before and after.
func (s *CallStore) UpdateCall(ctx context.Context, id int64, fn func(c *Call) error) (before, after Call, err error) {
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET id = id WHERE id = $1`, id)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		if before, err = scanCall(tx.QueryRowContext(ctx, callSelect+` WHERE id = $1`, id)); err != nil {
			return err
		}
		after = before
		if err := fn(&after); err != nil {
			return err
		}
		after.ID, after.OrgID, after.CreatedAt = before.ID, before.OrgID, before.CreatedAt
		after.UpdatedAt = fromMS(s.nowMS())
		sets := strings.Split(strings.TrimPrefix(callColumns, "id, "), ",")
		for i := range sets {
			sets[i] = strings.TrimSpace(sets[i]) + " = $" + itoa(i+1)
		}
		args := append(callArgs(after), id)
		_, err = tx.ExecContext(ctx, `UPDATE calls SET `+strings.Join(sets, ", ")+` WHERE id = $`+itoa(len(args)), args...)
		return translate(err)
	})
	return before, after, err
}

// CallFilter selects calls of one organization. Zero fields do not filter.
type CallFilter struct {
	OrgID     int64
	Status    string
	Direction string
	AgentID   *int64
	// Number matches calls from or to this E.164 number.
	Number        string
	StartedAfter  *time.Time // inclusive
	StartedBefore *time.Time // exclusive
	IsSimulation  *bool
	Limit, Offset int
}

// Calls lists the calls f selects, newest start first with the id
// breaking ties (a stable order for paging), and the total that match.
func (s *CallStore) Calls(ctx context.Context, f CallFilter) ([]Call, int64, error) {
	where := []string{"org_id = $1"}
	args := []any{f.OrgID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+itoa(len(args))))
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	if f.Direction != "" {
		add("direction = ?", f.Direction)
	}
	if f.AgentID != nil {
		add("agent_id = ?", *f.AgentID)
	}
	if f.Number != "" {
		add("(from_number = ? OR to_number = ?)", f.Number)
	}
	if f.StartedAfter != nil {
		add("start_time >= ?", ms(*f.StartedAfter))
	}
	if f.StartedBefore != nil {
		add("start_time < ?", ms(*f.StartedBefore))
	}
	if f.IsSimulation != nil {
		add("is_simulation = ?", *f.IsSimulation)
	}
	cond := strings.Join(where, " AND ")
	var total int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM calls WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, translate(err)
	}
	n := len(args)
	rows, err := s.db.QueryContext(ctx, callSelect+` WHERE `+cond+` ORDER BY start_time DESC, id DESC LIMIT $`+itoa(n+1)+` OFFSET $`+itoa(n+2),
		append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, translate(err)
	}
	defer rows.Close()
	out := []Call{}
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, c)
	}
	return out, total, translate(rows.Err())
}

func itoa(i int) string { return strconv.Itoa(i) }
