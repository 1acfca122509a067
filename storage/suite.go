package storage

import (
	"context"
	"database/sql"
	"encoding/json"
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
	CreatedAt          time.Time
	UpdatedAt          time.Time
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
	CreatedAt   time.Time
	CompletedAt *time.Time
}

const suiteCols = `id, org_id, agent_id, name, description, scenario_ids, min_pass_rate, no_critical_failures, schedule, channel, phone_number_id, enabled, created_at, updated_at`

func scanSuite(row rowScanner) (Suite, error) {
	var s Suite
	var ids string
	var phone sql.NullInt64
	var c, u int64
	if err := row.Scan(&s.ID, &s.OrgID, &s.AgentID, &s.Name, &s.Description, &ids, &s.MinPassRate, &s.NoCriticalFailures, &s.Schedule, &s.Channel, &phone, &s.Enabled, &c, &u); err != nil {
		return Suite{}, translate(err)
	}
	if err := json.Unmarshal([]byte(ids), &s.ScenarioIDs); err != nil {
		return Suite{}, err
	}
	if phone.Valid {
		s.PhoneNumberID = &phone.Int64
	}
	s.CreatedAt, s.UpdatedAt = fromMS(c), fromMS(u)
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
	_, err := s.db.ExecContext(ctx, `INSERT INTO test_suites (`+suiteCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
		su.ID, su.OrgID, su.AgentID, su.Name, su.Description, idsJSON(su.ScenarioIDs), su.MinPassRate, su.NoCriticalFailures, su.Schedule, su.Channel,
		nullInt(su.PhoneNumberID), su.Enabled, now)
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

// UpdateSuite writes su's editable fields and returns it with updated_at
// set, or ErrNotFound.
func (s *ScenarioStore) UpdateSuite(ctx context.Context, su Suite) (Suite, error) {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE test_suites SET agent_id = $1, name = $2, description = $3, scenario_ids = $4, min_pass_rate = $5,
		no_critical_failures = $6, schedule = $7, channel = $8, phone_number_id = $9, enabled = $10, updated_at = $11 WHERE org_id = $12 AND id = $13`,
		su.AgentID, su.Name, su.Description, idsJSON(su.ScenarioIDs), su.MinPassRate, su.NoCriticalFailures, su.Schedule, su.Channel,
		nullInt(su.PhoneNumberID), su.Enabled, now, su.OrgID, su.ID)
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

const testRunCols = `id, org_id, agent_id, suite_id, status, channel, verdict, total_count, pass_count, fail_count, pass_rate, prompt_hash, runs, regressions, created_at, completed_at`

func scanTestRun(row rowScanner) (TestRun, error) {
	var r TestRun
	var suite sql.NullString
	var rate sql.NullFloat64
	var runs, regs string
	var c int64
	var done sql.NullInt64
	if err := row.Scan(&r.ID, &r.OrgID, &r.AgentID, &suite, &r.Status, &r.Channel, &r.Verdict, &r.TotalCount, &r.PassCount, &r.FailCount,
		&rate, &r.PromptHash, &runs, &regs, &c, &done); err != nil {
		return TestRun{}, translate(err)
	}
	if suite.Valid {
		r.SuiteID = &suite.String
	}
	if rate.Valid {
		r.PassRate = &rate.Float64
	}
	r.Runs, r.Regressions = json.RawMessage(runs), json.RawMessage(regs)
	r.CreatedAt, r.CompletedAt = fromMS(c), fromNullMS(done)
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
		prompt_hash, runs, regressions, created_at, completed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
		r.OrgID, r.AgentID, nullStr(r.SuiteID), r.Status, r.Channel, r.Verdict, r.TotalCount, r.PassCount, r.FailCount, rate, r.PromptHash,
		rawOr(r.Runs, "[]"), rawOr(r.Regressions, "[]"), created, nullMS(r.CompletedAt)).Scan(&r.ID)
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
	return s.testRuns(ctx, `WHERE org_id = $1 AND suite_id = $2 ORDER BY id DESC LIMIT $3`, orgID, suiteID, limit)
}

// TestRun returns test run id of the agent, or ErrNotFound.
func (s *ScenarioStore) TestRun(ctx context.Context, orgID, agentID, id int64) (TestRun, error) {
	return scanTestRun(s.db.QueryRowContext(ctx, `SELECT `+testRunCols+` FROM test_runs WHERE org_id = $1 AND agent_id = $2 AND id = $3`, orgID, agentID, id))
}
