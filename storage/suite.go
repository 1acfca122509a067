package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// Suite is a named set of one agent's scenarios (UUID id) with its pass
// rule and schedule (spec 2.12, 4.8). ScenarioIDs empty means all of the
// agent's scenarios.
type Suite struct {
	ID                 string
	OrgID              int64
	AgentID            int64
	Name               string
	Description        string
	ScenarioIDs        []int64
	MinPassRate        float64
	NoCriticalFailures bool
	Schedule           string
	Channel            string
	PhoneNumberID      *int64
	Enabled            bool
	// NextRunAt is when the schedule next starts the suite (nil: it
	// does not: schedule none, or disabled).
	NextRunAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TestRun is one test run (a simulation batch over scenarios) of an
// agent, for a suite when SuiteID is set. Runs and Regressions are JSON
// arrays.
type TestRun struct {
	ID          int64
	OrgID       int64
	AgentID     int64
	SuiteID     *string
	Status      string
	Channel     string
	Verdict     string
	TotalCount  int64
	PassCount   int64
	FailCount   int64
	PassRate    *float64
	PromptHash  string
	Runs        json.RawMessage
	Regressions json.RawMessage
	// ScheduledFor is the schedule slot a scheduled run was started for
	// (nil: started by a request).
	ScheduledFor *time.Time
	// ErrorMessage says why a run could not start; VerdictReason why a
	// suite run passed or failed.
	ErrorMessage  string
	VerdictReason string
	// CriticalFailureCount counts the runs whose call has a critical
	// issue report.
	CriticalFailureCount int64
	// BaselineID is the suite run regressions were computed against.
	BaselineID  *int64
	CreatedAt   time.Time
	CompletedAt *time.Time
}

const suiteCols = `id, org_id, agent_id, name, description, scenario_ids, min_pass_rate, no_critical_failures, schedule, channel, phone_number_id, enabled, next_run_at, created_at, updated_at`

func scanSuite(row rowScanner) (Suite, error) {
	var s Suite
	var ids string
	var phone, next sql.NullInt64
	var c, u int64
	if err := row.Scan(&s.ID, &s.OrgID, &s.AgentID, &s.Name, &s.Description, &ids, &s.MinPassRate, &s.NoCriticalFailures, &s.Schedule, &s.Channel, &phone, &s.Enabled, &next, &c, &u); err != nil {
		return Suite{}, translate(err)
	}
	if err := json.Unmarshal([]byte(ids), &s.ScenarioIDs); err != nil {
		return Suite{}, err
	}
	if phone.Valid {
		s.PhoneNumberID = &phone.Int64
	}
	s.NextRunAt, s.CreatedAt, s.UpdatedAt = fromNullMS(next), fromMS(c), fromMS(u)
	return s, nil
}

func idsJSON(ids []int64) string {
	if ids == nil {
		ids = []int64{}
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// CreateSuite stores su with a new UUID and timestamps.
func (s *ScenarioStore) CreateSuite(ctx context.Context, su Suite) (Suite, error) {
	now := s.nowMS()
	su.ID, su.CreatedAt, su.UpdatedAt = NewUUID(), fromMS(now), fromMS(now)
	_, err := s.db.ExecContext(ctx, `INSERT INTO test_suites (`+suiteCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)`,
		su.ID, su.OrgID, su.AgentID, su.Name, su.Description, idsJSON(su.ScenarioIDs), su.MinPassRate, su.NoCriticalFailures, su.Schedule, su.Channel,
		nullInt(su.PhoneNumberID), su.Enabled, nullMS(su.NextRunAt), now)
	if err != nil {
		return Suite{}, translate(err)
	}
	return su, nil
}

// Suites lists the org's suites, newest first.
func (s *ScenarioStore) Suites(ctx context.Context, orgID int64) ([]Suite, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+suiteCols+` FROM test_suites WHERE org_id = $1 ORDER BY created_at DESC, id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Suite{}
	for rows.Next() {
		su, err := scanSuite(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, su)
	}
	return out, rows.Err()
}

// Suite returns the org's suite id, or ErrNotFound.
func (s *ScenarioStore) Suite(ctx context.Context, orgID int64, id string) (Suite, error) {
	return scanSuite(s.db.QueryRowContext(ctx, `SELECT `+suiteCols+` FROM test_suites WHERE org_id = $1 AND id = $2`, orgID, id))
}

// UpdateSuite writes su's editable fields and its next_run_at and
// returns it with updated_at set, or ErrNotFound. A scheduler holding
// the suite then finds its slot moved (AdvanceSuite: ErrConflict).
func (s *ScenarioStore) UpdateSuite(ctx context.Context, su Suite) (Suite, error) {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE test_suites SET agent_id = $1, name = $2, description = $3, scenario_ids = $4, min_pass_rate = $5,
		no_critical_failures = $6, schedule = $7, channel = $8, phone_number_id = $9, enabled = $10, updated_at = $11, next_run_at = $14
		WHERE org_id = $12 AND id = $13`,
		su.AgentID, su.Name, su.Description, idsJSON(su.ScenarioIDs), su.MinPassRate, su.NoCriticalFailures, su.Schedule, su.Channel,
		nullInt(su.PhoneNumberID), su.Enabled, now, su.OrgID, su.ID, nullMS(su.NextRunAt))
	if err != nil {
		return Suite{}, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Suite{}, ErrNotFound
	}
	su.UpdatedAt = fromMS(now)
	return su, nil
}

// DeleteSuite deletes the org's suite id (its runs stay, without the
// suite), or ErrNotFound.
func (s *ScenarioStore) DeleteSuite(ctx context.Context, orgID int64, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM test_suites WHERE org_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

const testRunCols = `id, org_id, agent_id, suite_id, status, channel, verdict, total_count, pass_count, fail_count, pass_rate, prompt_hash, runs, regressions,
	scheduled_for, error_message, verdict_reason, critical_failure_count, baseline_test_run_id, created_at, completed_at`

func scanTestRun(row rowScanner) (TestRun, error) {
	var r TestRun
	var suite sql.NullString
	var rate sql.NullFloat64
	var runs, regs string
	var c int64
	var done, slot, baseline sql.NullInt64
	if err := row.Scan(&r.ID, &r.OrgID, &r.AgentID, &suite, &r.Status, &r.Channel, &r.Verdict, &r.TotalCount, &r.PassCount, &r.FailCount,
		&rate, &r.PromptHash, &runs, &regs, &slot, &r.ErrorMessage, &r.VerdictReason, &r.CriticalFailureCount, &baseline, &c, &done); err != nil {
		return TestRun{}, translate(err)
	}
	if suite.Valid {
		r.SuiteID = &suite.String
	}
	if rate.Valid {
		r.PassRate = &rate.Float64
	}
	r.Runs, r.Regressions = json.RawMessage(runs), json.RawMessage(regs)
	if baseline.Valid {
		r.BaselineID = &baseline.Int64
	}
	r.ScheduledFor, r.CreatedAt, r.CompletedAt = fromNullMS(slot), fromMS(c), fromNullMS(done)
	return r, nil
}

func rawOr(b json.RawMessage, def string) string {
	if len(b) == 0 {
		return def
	}
	return string(b)
}

// CreateTestRun stores r and returns it with its id; CreatedAt is r's
// when set, else now.
func (s *ScenarioStore) CreateTestRun(ctx context.Context, r TestRun) (TestRun, error) {
	created := r.CreatedAt.UnixMilli()
	if r.CreatedAt.IsZero() {
		created = s.nowMS()
	}
	if r.Verdict == "" {
		r.Verdict = "unknown"
	}
	var rate any
	if r.PassRate != nil {
		rate = *r.PassRate
	}
	err := s.db.QueryRowContext(ctx, `INSERT INTO test_runs (org_id, agent_id, suite_id, status, channel, verdict, total_count, pass_count, fail_count, pass_rate,
		prompt_hash, runs, regressions, created_at, completed_at, scheduled_for, error_message, verdict_reason, critical_failure_count, baseline_test_run_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) RETURNING id`,
		r.OrgID, r.AgentID, nullStr(r.SuiteID), r.Status, r.Channel, r.Verdict, r.TotalCount, r.PassCount, r.FailCount, rate, r.PromptHash,
		rawOr(r.Runs, "[]"), rawOr(r.Regressions, "[]"), created, nullMS(r.CompletedAt), nullMS(r.ScheduledFor), r.ErrorMessage, r.VerdictReason,
		r.CriticalFailureCount, nullInt(r.BaselineID)).Scan(&r.ID)
	if err != nil {
		return TestRun{}, translate(err)
	}
	r.CreatedAt = fromMS(created)
	r.Runs, r.Regressions = json.RawMessage(rawOr(r.Runs, "[]")), json.RawMessage(rawOr(r.Regressions, "[]"))
	return r, nil
}

func (s *ScenarioStore) testRuns(ctx context.Context, q string, args ...any) ([]TestRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+testRunCols+` FROM test_runs `+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []TestRun{}
	for rows.Next() {
		r, err := scanTestRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// TestRuns lists an agent's test runs, newest first.
func (s *ScenarioStore) TestRuns(ctx context.Context, orgID, agentID int64, limit, offset int) ([]TestRun, error) {
	return s.testRuns(ctx, `WHERE org_id = $1 AND agent_id = $2 ORDER BY id DESC LIMIT $3 OFFSET $4`, orgID, agentID, limit, offset)
}

// SuiteRuns lists a suite's most recent limit runs, newest first.
func (s *ScenarioStore) SuiteRuns(ctx context.Context, orgID int64, suiteID string, limit int) ([]TestRun, error) {
	return s.SuiteRunsPage(ctx, orgID, suiteID, limit, 0)
}

// SuiteRunsPage lists a suite's runs, newest first, limit from offset.
func (s *ScenarioStore) SuiteRunsPage(ctx context.Context, orgID int64, suiteID string, limit, offset int) ([]TestRun, error) {
	return s.testRuns(ctx, `WHERE org_id = $1 AND suite_id = $2 ORDER BY id DESC LIMIT $3 OFFSET $4`, orgID, suiteID, limit, offset)
}

// SuiteRun returns run id of the org's suite, or ErrNotFound.
func (s *ScenarioStore) SuiteRun(ctx context.Context, orgID int64, suiteID string, id int64) (TestRun, error) {
	return scanTestRun(s.db.QueryRowContext(ctx, `SELECT `+testRunCols+` FROM test_runs WHERE org_id = $1 AND suite_id = $2 AND id = $3`, orgID, suiteID, id))
}

// TestRunByID returns the org's test run id, or ErrNotFound.
func (s *ScenarioStore) TestRunByID(ctx context.Context, orgID, id int64) (TestRun, error) {
	return scanTestRun(s.db.QueryRowContext(ctx, `SELECT `+testRunCols+` FROM test_runs WHERE org_id = $1 AND id = $2`, orgID, id))
}

// BaselineRun is the baseline of suite run id: the suite's latest run
// before it that completed (status completed, with at least one run
// judged pass or fail), or ErrNotFound.
func (s *ScenarioStore) BaselineRun(ctx context.Context, orgID int64, suiteID string, id int64) (TestRun, error) {
	return scanTestRun(s.db.QueryRowContext(ctx, `SELECT `+testRunCols+` FROM test_runs WHERE org_id = $1 AND suite_id = $2 AND id < $3
		AND status = 'completed' AND pass_count + fail_count > 0 ORDER BY id DESC LIMIT 1`, orgID, suiteID, id))
}

// ClaimDueSuite leases, for lease from now, one enabled suite whose
// next_run_at is at or before now and whose lease (if any) has run out,
// and returns it; ok false when none is due. now is the scheduler's
// clock (tests accelerate it), not the store's.
func (s *ScenarioStore) ClaimDueSuite(ctx context.Context, now time.Time, owner string, lease time.Duration) (su Suite, ok bool, err error) {
	n := ms(now)
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		var id string
		err := tx.QueryRowContext(ctx, `SELECT id FROM test_suites WHERE next_run_at IS NOT NULL AND next_run_at <= $1 AND enabled AND schedule <> 'none'
			AND (schedule_lease_until IS NULL OR schedule_lease_until <= $1) ORDER BY next_run_at, id LIMIT 1`, n).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return translate(err)
		}
		// The guard repeats the choice: a replica that chose the same
		// suite concurrently updates nothing.
		res, err := tx.ExecContext(ctx, `UPDATE test_suites SET schedule_owner = $1, schedule_lease_until = $2 WHERE id = $3
			AND (schedule_lease_until IS NULL OR schedule_lease_until <= $4) AND next_run_at IS NOT NULL AND next_run_at <= $4`, owner, ms(now.Add(lease)), id, n)
		if err != nil {
			return translate(err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil
		}
		su, err = scanSuite(tx.QueryRowContext(ctx, `SELECT `+suiteCols+` FROM test_suites WHERE id = $1`, id))
		ok = err == nil
		return err
	})
	return su, ok, err
}

// AdvanceSuite moves suite id's schedule from slot to next and releases
// owner's lease; ErrConflict when owner no longer holds it or the
// schedule changed meanwhile (an edit set a new next_run_at: it stands).
func (s *ScenarioStore) AdvanceSuite(ctx context.Context, id, owner string, slot time.Time, next *time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE test_suites SET next_run_at = $1, schedule_owner = NULL, schedule_lease_until = NULL
		WHERE id = $2 AND schedule_owner = $3 AND next_run_at = $4`, nullMS(next), id, owner, ms(slot))
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrConflict
	}
	return nil
}

// TestRun returns test run id of the agent, or ErrNotFound.
func (s *ScenarioStore) TestRun(ctx context.Context, orgID, agentID, id int64) (TestRun, error) {
	return scanTestRun(s.db.QueryRowContext(ctx, `SELECT `+testRunCols+` FROM test_runs WHERE org_id = $1 AND agent_id = $2 AND id = $3`, orgID, agentID, id))
}
