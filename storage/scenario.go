package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/voiced/voiced/storage/migrations"
)

// ScenarioStore keeps test scenarios, suites and test runs (spec 2.12,
// 4.8). The nested scenario objects are JSON the control plane validates.
type ScenarioStore struct{ *base }

// Scenario is one test scenario of an agent. PromoteKey, set on
// production scenarios, is unique per org: "<call id>/<issue trace id>".
type Scenario struct {
	ID                 int64
	OrgID              int64
	AgentID            int64
	Title              string
	ScenarioPrompt     string
	Labels             json.RawMessage
	AudioConditions    json.RawMessage
	SpeechStyle        json.RawMessage
	CallerBehavior     json.RawMessage
	Telephony          json.RawMessage
	Direction          string
	Source             string
	PromptHash         string
	SourceCallID       *int64
	SourceIssueTraceID *string
	SourceTurnIndex    *int64
	PromoteKey         *string
	LatestVerdict      string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

const scenarioCols = `id, org_id, agent_id, title, scenario_prompt, labels, audio_conditions, speech_style, caller_behavior, telephony,
	direction, source, prompt_hash, source_call_id, source_issue_trace_id, source_turn_index, promote_key, latest_verdict, created_at, updated_at`

func scanScenario(row rowScanner) (Scenario, error) {
	var s Scenario
	var labels, audio, speech, caller, tel string
	var callID, turn sql.NullInt64
	var trace, key sql.NullString
	var c, u int64
	if err := row.Scan(&s.ID, &s.OrgID, &s.AgentID, &s.Title, &s.ScenarioPrompt, &labels, &audio, &speech, &caller, &tel,
		&s.Direction, &s.Source, &s.PromptHash, &callID, &trace, &turn, &key, &s.LatestVerdict, &c, &u); err != nil {
		return Scenario{}, translate(err)
	}
	s.Labels, s.AudioConditions, s.SpeechStyle, s.CallerBehavior, s.Telephony = json.RawMessage(labels), json.RawMessage(audio), json.RawMessage(speech), json.RawMessage(caller), json.RawMessage(tel)
	if callID.Valid {
		s.SourceCallID = &callID.Int64
	}
	if turn.Valid {
		s.SourceTurnIndex = &turn.Int64
	}
	if trace.Valid {
		s.SourceIssueTraceID = &trace.String
	}
	if key.Valid {
		s.PromoteKey = &key.String
	}
	s.CreatedAt, s.UpdatedAt = fromMS(c), fromMS(u)
	return s, nil
}

// CreateScenarios stores ss in one transaction (a generated batch is
// saved whole or not at all) and returns them with ids and timestamps. A
// PromoteKey the org already has is ErrConflict.
func (s *ScenarioStore) CreateScenarios(ctx context.Context, ss []Scenario) ([]Scenario, error) {
	now := s.nowMS()
	out := make([]Scenario, len(ss))
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		for i, sc := range ss {
			sc.CreatedAt, sc.UpdatedAt = fromMS(now), fromMS(now)
			if sc.LatestVerdict == "" {
				sc.LatestVerdict = "unknown"
			}
			if err := tx.QueryRowContext(ctx, `INSERT INTO test_scenarios (org_id, agent_id, title, scenario_prompt, labels, audio_conditions, speech_style,
				caller_behavior, telephony, direction, source, prompt_hash, source_call_id, source_issue_trace_id, source_turn_index, promote_key, latest_verdict, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18) RETURNING id`,
				sc.OrgID, sc.AgentID, sc.Title, sc.ScenarioPrompt, string(sc.Labels), string(sc.AudioConditions), string(sc.SpeechStyle),
				string(sc.CallerBehavior), string(sc.Telephony), sc.Direction, sc.Source, sc.PromptHash, nullInt(sc.SourceCallID),
				nullStr(sc.SourceIssueTraceID), nullInt(sc.SourceTurnIndex), nullStr(sc.PromoteKey), sc.LatestVerdict, now).Scan(&sc.ID); err != nil {
				return translate(err)
			}
			out[i] = sc
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Scenarios lists an agent's scenarios, oldest first.
func (s *ScenarioStore) Scenarios(ctx context.Context, orgID, agentID int64) ([]Scenario, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+scenarioCols+` FROM test_scenarios WHERE org_id = $1 AND agent_id = $2 ORDER BY id`, orgID, agentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Scenario{}
	for rows.Next() {
		sc, err := scanScenario(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

// Scenario returns scenario id of the agent, or ErrNotFound.
func (s *ScenarioStore) Scenario(ctx context.Context, orgID, agentID, id int64) (Scenario, error) {
	return scanScenario(s.db.QueryRowContext(ctx, `SELECT `+scenarioCols+` FROM test_scenarios WHERE org_id = $1 AND agent_id = $2 AND id = $3`, orgID, agentID, id))
}

// PromotedScenario returns the org's scenario with promote key key, or
// ErrNotFound.
func (s *ScenarioStore) PromotedScenario(ctx context.Context, orgID int64, key string) (Scenario, error) {
	return scanScenario(s.db.QueryRowContext(ctx, `SELECT `+scenarioCols+` FROM test_scenarios WHERE org_id = $1 AND promote_key = $2`, orgID, key))
}

// ScenariosFromIssues lists the org's scenarios promoted from the issue
// reports traceIDs (matched case-insensitively), oldest first.
func (s *ScenarioStore) ScenariosFromIssues(ctx context.Context, orgID int64, traceIDs []string) ([]Scenario, error) {
	out := []Scenario{}
	if len(traceIDs) == 0 {
		return out, nil
	}
	lower := make([]string, len(traceIDs))
	for i, t := range traceIDs {
		lower[i] = strings.ToLower(t)
	}
	q := `SELECT ` + scenarioCols + ` FROM test_scenarios WHERE org_id = $1 AND lower(source_issue_trace_id) IN (SELECT value FROM json_each($2)) ORDER BY id`
	var arg any
	if s.db.Dialect == migrations.Postgres {
		q = `SELECT ` + scenarioCols + ` FROM test_scenarios WHERE org_id = $1 AND lower(source_issue_trace_id) = ANY($2::text[]) ORDER BY id`
		arg = lower
	} else {
		b, _ := json.Marshal(lower)
		arg = string(b)
	}
	rows, err := s.db.QueryContext(ctx, q, orgID, arg)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		sc, err := scanScenario(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, translate(rows.Err())
}

// UpdateScenarios writes the editable fields of ss (title, prompt,
// labels, the nested objects, direction, prompt hash, verdict) in one
// transaction, and returns them with updated_at set. A missing row is
// ErrNotFound and nothing is written.
func (s *ScenarioStore) UpdateScenarios(ctx context.Context, ss []Scenario) ([]Scenario, error) {
	now := s.nowMS()
	out := make([]Scenario, len(ss))
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		for i, sc := range ss {
			res, err := tx.ExecContext(ctx, `UPDATE test_scenarios SET title = $1, scenario_prompt = $2, labels = $3, audio_conditions = $4, speech_style = $5,
				caller_behavior = $6, telephony = $7, direction = $8, prompt_hash = $9, latest_verdict = $10, updated_at = $11
				WHERE org_id = $12 AND agent_id = $13 AND id = $14`,
				sc.Title, sc.ScenarioPrompt, string(sc.Labels), string(sc.AudioConditions), string(sc.SpeechStyle), string(sc.CallerBehavior),
				string(sc.Telephony), sc.Direction, sc.PromptHash, sc.LatestVerdict, now, sc.OrgID, sc.AgentID, sc.ID)
			if err != nil {
				return translate(err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return ErrNotFound
			}
			sc.UpdatedAt = fromMS(now)
			out[i] = sc
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteScenario deletes scenario id of the agent, or ErrNotFound.
func (s *ScenarioStore) DeleteScenario(ctx context.Context, orgID, agentID, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM test_scenarios WHERE org_id = $1 AND agent_id = $2 AND id = $3`, orgID, agentID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
