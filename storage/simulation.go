package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// SimulationStore keeps simulation runs and batches (spec 2.11, 3, 4.7).
// The runs table is also the queue the simulation worker claims from.
type SimulationStore struct{ *base }

// ErrSimulationLimit means the org already has the most runs queued or
// in progress that it may.
var ErrSimulationLimit = errors.New("storage: too many simulation runs queued or in progress")

// Simulation run statuses.
const (
	SimQueued     = "queued"
	SimInProgress = "in_progress"
	SimCompleted  = "completed"
	SimFailed     = "failed"
)

// SimulationRun is one simulated call against a target.
type SimulationRun struct {
	ID                 int64
	OrgID              int64
	BatchID            *int64
	TargetType         string
	TargetID           *int64
	TargetName         string
	AgentID            *int64
	AgentName          *string
	Direction          string
	Mode               string
	TargetNumber       string
	ScenarioPrompt     string
	Language           string
	SimulatorProduct   string
	Status             string
	ChargeMultiplier   float64
	EstimatedCostCents *int64
	ChargedCents       *int64
	CallID             *int64
	ErrorMessage       string
	Metadata           json.RawMessage
	Transcript         json.RawMessage
	RequestedByID      *int64
	NotBefore          time.Time
	LeaseOwner         string
	Attempts           int64
	DurationSeconds    *int64
	StartedAt          *time.Time
	CompletedAt        *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// Caller is the simulated caller's settings (JSON; "{}" for the
	// defaults); TestRunID and ScenarioID are set for a test run's runs.
	Caller     json.RawMessage
	TestRunID  *int64
	ScenarioID *int64
}

// SimulationBatch is a set of staggered runs against one target.
type SimulationBatch struct {
	ID             int64
	OrgID          int64
	TargetType     string
	TargetID       int64
	Count          int64
	StaggerSeconds int64
	RequestedByID  *int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// RunIDs and the runs' statuses, by Batch and Batches.
	RunIDs      []int64
	RunStatuses []string
}

const simCols = `id, org_id, batch_id, target_type, target_id, target_name, agent_id, agent_name, direction, mode, target_number,
	scenario_prompt, language, simulator_product, status, charge_multiplier, estimated_cost_cents, charged_cents, call_id, error_message,
	metadata, transcript, requested_by_id, not_before, lease_owner, attempts, duration_seconds, started_at, completed_at, created_at, updated_at,
	caller, test_run_id, scenario_id`

func scanSim(row rowScanner) (SimulationRun, error) {
	var r SimulationRun
	var batch, target, agent, est, charged, call, by, dur, started, completed, testRun, scenario sql.NullInt64
	var agentName sql.NullString
	var meta, tr, caller string
	var nb, c, u int64
	if err := row.Scan(&r.ID, &r.OrgID, &batch, &r.TargetType, &target, &r.TargetName, &agent, &agentName, &r.Direction, &r.Mode,
		&r.TargetNumber, &r.ScenarioPrompt, &r.Language, &r.SimulatorProduct, &r.Status, &r.ChargeMultiplier, &est, &charged, &call,
		&r.ErrorMessage, &meta, &tr, &by, &nb, &r.LeaseOwner, &r.Attempts, &dur, &started, &completed, &c, &u,
		&caller, &testRun, &scenario); err != nil {
		return SimulationRun{}, translate(err)
	}
	ip := func(v sql.NullInt64) *int64 {
		if !v.Valid {
			return nil
		}
		x := v.Int64
		return &x
	}
	tp := func(v sql.NullInt64) *time.Time {
		if !v.Valid {
			return nil
		}
		t := fromMS(v.Int64)
		return &t
	}
	r.BatchID, r.TargetID, r.AgentID, r.EstimatedCostCents, r.ChargedCents, r.CallID, r.RequestedByID, r.DurationSeconds =
		ip(batch), ip(target), ip(agent), ip(est), ip(charged), ip(call), ip(by), ip(dur)
	r.StartedAt, r.CompletedAt = tp(started), tp(completed)
	r.TestRunID, r.ScenarioID, r.Caller = ip(testRun), ip(scenario), json.RawMessage(caller)
	if agentName.Valid {
		r.AgentName = &agentName.String
	}
	r.Metadata, r.Transcript = json.RawMessage(meta), json.RawMessage(tr)
	r.NotBefore, r.CreatedAt, r.UpdatedAt = fromMS(nb), fromMS(c), fromMS(u)
	return r, nil
}

// CreateSimulationRuns stores runs (queued) and, when batch is set, the
// batch they belong to, in one transaction, unless the org would then
// have more than limit runs queued or in progress (ErrSimulationLimit).
// The org's billing account row is locked first, so concurrent requests
// count each other's runs.
func (s *SimulationStore) CreateSimulationRuns(ctx context.Context, orgID int64, runs []SimulationRun, batch *SimulationBatch, limit int) ([]SimulationRun, *SimulationBatch, error) {
	now := s.nowMS()
	out := make([]SimulationRun, len(runs))
	var b *SimulationBatch
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockAccount(ctx, tx, orgID); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := checkActive(ctx, tx, orgID, len(runs), limit); err != nil {
			return err
		}
		var batchID *int64
		if batch != nil {
			bb := *batch
			bb.OrgID, bb.CreatedAt, bb.UpdatedAt = orgID, fromMS(now), fromMS(now)
			if err := tx.QueryRowContext(ctx, `INSERT INTO simulation_batches (org_id, target_type, target_id, count, stagger_seconds,
				requested_by_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id`,
				orgID, bb.TargetType, bb.TargetID, bb.Count, bb.StaggerSeconds, nullInt(bb.RequestedByID), now).Scan(&bb.ID); err != nil {
				return translate(err)
			}
			b, batchID = &bb, &bb.ID
		}
		var err error
		out, err = insertSimRuns(ctx, tx, orgID, batchID, nil, runs, now)
		if err != nil {
			return err
		}
		if b != nil {
			b.RunIDs, b.RunStatuses = nil, nil
			for _, r := range out {
				b.RunIDs, b.RunStatuses = append(b.RunIDs, r.ID), append(b.RunStatuses, r.Status)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, b, nil
}

// checkActive is ErrSimulationLimit when the org's queued and in-progress
// runs plus n would be more than limit.
func checkActive(ctx context.Context, tx *sql.Tx, orgID int64, n, limit int) error {
	var active int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM simulation_runs WHERE org_id = $1 AND status IN ('queued', 'in_progress')`,
		orgID).Scan(&active); err != nil {
		return translate(err)
	}
	if active+n > limit {
		return ErrSimulationLimit
	}
	return nil
}

// insertSimRuns stores runs (queued) of batchID or testRunID inside tx.
func insertSimRuns(ctx context.Context, tx *sql.Tx, orgID int64, batchID, testRunID *int64, runs []SimulationRun, now int64) ([]SimulationRun, error) {
	out := make([]SimulationRun, len(runs))
	for i, r := range runs {
		r.OrgID, r.BatchID, r.Status = orgID, batchID, SimQueued
		if testRunID != nil {
			r.TestRunID = testRunID
		}
		if len(r.Metadata) == 0 {
			r.Metadata = json.RawMessage("{}")
		}
		if len(r.Transcript) == 0 {
			r.Transcript = json.RawMessage("[]")
		}
		if len(r.Caller) == 0 {
			r.Caller = json.RawMessage("{}")
		}
		if r.NotBefore.IsZero() {
			r.NotBefore = fromMS(now)
		}
		var err error
		r, err = scanSim(tx.QueryRowContext(ctx, `INSERT INTO simulation_runs (org_id, batch_id, target_type, target_id, target_name,
			agent_id, agent_name, direction, mode, target_number, scenario_prompt, language, simulator_product, status, charge_multiplier,
			estimated_cost_cents, metadata, transcript, requested_by_id, not_before, created_at, updated_at, caller, test_run_id, scenario_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $21, $22, $23, $24)
			RETURNING `+simCols, orgID, nullInt(batchID), r.TargetType, nullInt(r.TargetID), r.TargetName, nullInt(r.AgentID),
			nullStr(r.AgentName), r.Direction, r.Mode, r.TargetNumber, r.ScenarioPrompt, r.Language, r.SimulatorProduct, r.Status,
			r.ChargeMultiplier, nullInt(r.EstimatedCostCents), string(r.Metadata), string(r.Transcript), nullInt(r.RequestedByID),
			ms(r.NotBefore), now, string(r.Caller), nullInt(r.TestRunID), nullInt(r.ScenarioID)))
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// SimulationFilter selects runs of an org, newest first.
type SimulationFilter struct {
	OrgID         int64
	TargetType    string
	TargetID      *int64
	Status        string
	Limit, Offset int
}

// SimulationRuns lists runs, newest first.
func (s *SimulationStore) SimulationRuns(ctx context.Context, f SimulationFilter) ([]SimulationRun, error) {
	q := `SELECT ` + simCols + ` FROM simulation_runs WHERE org_id = $1`
	args := []any{f.OrgID}
	add := func(cond string, v any) {
		args = append(args, v)
		q += " AND " + strings.ReplaceAll(cond, "?", "$"+itoa(len(args)))
	}
	if f.TargetType != "" {
		add("target_type = ?", f.TargetType)
	}
	if f.TargetID != nil {
		add("target_id = ?", *f.TargetID)
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	args = append(args, f.Limit, f.Offset)
	q += ` ORDER BY id DESC LIMIT $` + itoa(len(args)-1) + ` OFFSET $` + itoa(len(args))
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []SimulationRun
	for rows.Next() {
		r, err := scanSim(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, translate(rows.Err())
}

// SimulationRun returns run id of orgID.
func (s *SimulationStore) SimulationRun(ctx context.Context, orgID, id int64) (SimulationRun, error) {
	return scanSim(s.db.QueryRowContext(ctx, `SELECT `+simCols+` FROM simulation_runs WHERE id = $1 AND org_id = $2`, id, orgID))
}

// FailStaleSimulationRuns marks orgID's runs failed whose completion
// signal was lost: queued runs due before queuedBefore, and runs in
// progress whose lease ran out before leaseBefore (no worker renews it).
// It returns how many it marked.
func (s *SimulationStore) FailStaleSimulationRuns(ctx context.Context, orgID int64, queuedBefore, leaseBefore time.Time, msg string) (int64, error) {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE simulation_runs SET status = 'failed', error_message = $1, completed_at = $2, updated_at = $2,
		lease_owner = '', lease_until = 0
		WHERE org_id = $3 AND ((status = 'queued' AND not_before < $4) OR (status = 'in_progress' AND lease_until < $5))`,
		msg, now, orgID, ms(queuedBefore), ms(leaseBefore))
	if err != nil {
		return 0, translate(err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// ClaimSimulationRun takes the oldest due queued run for owner under a
// lease and marks it in progress; ok false when none is due.
func (s *SimulationStore) ClaimSimulationRun(ctx context.Context, owner string, lease time.Duration) (SimulationRun, bool, error) {
	now := s.nowMS()
	for range 5 {
		var id int64
		err := s.db.QueryRowContext(ctx, `SELECT id FROM simulation_runs WHERE status = 'queued' AND not_before <= $1 ORDER BY not_before, id LIMIT 1`,
			now).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return SimulationRun{}, false, nil
		}
		if err != nil {
			return SimulationRun{}, false, translate(err)
		}
		r, err := scanSim(s.db.QueryRowContext(ctx, `UPDATE simulation_runs SET status = 'in_progress', lease_owner = $1, lease_until = $2,
			attempts = attempts + 1, started_at = $3, updated_at = $3 WHERE id = $4 AND status = 'queued' RETURNING `+simCols,
			owner, now+lease.Milliseconds(), now, id))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return SimulationRun{}, false, err
		}
		return r, true, nil
	}
	return SimulationRun{}, false, nil
}

// ExtendSimulationLease renews a claimed run's lease; ErrConflict when
// the run is no longer owner's and in progress.
func (s *SimulationStore) ExtendSimulationLease(ctx context.Context, id int64, owner string, lease time.Duration) error {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE simulation_runs SET lease_until = $1 WHERE id = $2 AND lease_owner = $3 AND status = 'in_progress'`,
		now+lease.Milliseconds(), id, owner)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrConflict
	}
	return nil
}

// SimulationEnd is how a run ended.
type SimulationEnd struct {
	Status          string // completed or failed
	ErrorMessage    string
	CallID          *int64
	DurationSeconds *int64
	Metadata        json.RawMessage
	Transcript      json.RawMessage
	// ChargeCents, when positive, is debited from the org's balance as
	// call usage (reference "simulation:<id>", once).
	ChargeCents int64
	// Event is the test-call.completed payload.
	Event func(r SimulationRun) ([]byte, error)
}

// FinishSimulationRun ends run id in one transaction: its outcome, the
// charge on the ledger and the test-call.completed event. owner, when
// set, must still hold the run (else ErrConflict and nothing changes);
// empty finishes a queued or in-progress run regardless (a run that
// could not start). A charge the balance cannot cover takes what is
// left and says so in the run's error message.
func (s *SimulationStore) FinishSimulationRun(ctx context.Context, id int64, owner string, e SimulationEnd) (SimulationRun, error) {
	now := s.nowMS()
	var out SimulationRun
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		cond := `status IN ('queued', 'in_progress')`
		args := []any{e.Status, e.ErrorMessage, nullInt(e.CallID), nullInt(e.DurationSeconds), now, id}
		if owner != "" {
			cond = `status = 'in_progress' AND lease_owner = $7`
			args = append(args, owner)
		}
		if len(e.Metadata) == 0 {
			e.Metadata = json.RawMessage("{}")
		}
		if len(e.Transcript) == 0 {
			e.Transcript = json.RawMessage("[]")
		}
		args = append(args, string(e.Metadata), string(e.Transcript))
		mi, ti := itoa(len(args)-1), itoa(len(args))
		r, err := scanSim(tx.QueryRowContext(ctx, `UPDATE simulation_runs SET status = $1, error_message = $2, call_id = $3, duration_seconds = $4,
			completed_at = $5, updated_at = $5, lease_owner = '', lease_until = 0, metadata = $`+mi+`, transcript = $`+ti+`
			WHERE id = $6 AND `+cond+` RETURNING `+simCols, args...))
		if errors.Is(err, ErrNotFound) {
			return ErrConflict
		}
		if err != nil {
			return err
		}
		if e.ChargeCents > 0 {
			charge := e.ChargeCents
			bal, err := s.balanceTx(ctx, tx, r.OrgID)
			if err != nil {
				return err
			}
			if bal < charge {
				charge = max(bal, 0)
			}
			if charge > 0 {
				if _, _, err := (&BillingStore{s.base}).postTx(ctx, tx, r.OrgID, TxCallUsage, -charge, "Simulation run "+itoa(int(r.ID))+" (simulated caller)",
					"simulation:"+itoa(int(r.ID)), now); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE simulation_runs SET charged_cents = $1 WHERE id = $2`, charge, r.ID); err != nil {
				return translate(err)
			}
			r.ChargedCents = &charge
		}
		if e.Event != nil {
			data, err := e.Event(r)
			if err != nil {
				return err
			}
			if _, err := s.emitTx(ctx, tx, r.OrgID, "test-call.completed", data, now); err != nil {
				return err
			}
		}
		out = r
		return nil
	})
	return out, err
}

// balanceTx is the org's balance inside tx (0 without an account).
func (s *SimulationStore) balanceTx(ctx context.Context, tx *sql.Tx, orgID int64) (int64, error) {
	var b int64
	err := tx.QueryRowContext(ctx, `SELECT balance_cents FROM billing_accounts WHERE org_id = $1`, orgID).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return b, translate(err)
}

// SimulationBatches lists orgID's batches, newest first, with their runs;
// status filters on the batch's derived status (BatchStatus).
func (s *SimulationStore) SimulationBatches(ctx context.Context, orgID int64, status string, limit, offset int) ([]SimulationBatch, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, org_id, target_type, target_id, count, stagger_seconds, requested_by_id, created_at, updated_at
		FROM simulation_batches WHERE org_id = $1 ORDER BY id DESC`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	var all []SimulationBatch
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	var out []SimulationBatch
	for _, b := range all {
		if err := s.batchRuns(ctx, &b); err != nil {
			return nil, err
		}
		if status != "" && BatchStatus(b.RunStatuses) != status {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		out = append(out, b)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// SimulationBatch returns batch id of orgID with its runs.
func (s *SimulationStore) SimulationBatch(ctx context.Context, orgID, id int64) (SimulationBatch, error) {
	b, err := scanBatch(s.db.QueryRowContext(ctx, `SELECT id, org_id, target_type, target_id, count, stagger_seconds, requested_by_id,
		created_at, updated_at FROM simulation_batches WHERE id = $1 AND org_id = $2`, id, orgID))
	if err != nil {
		return SimulationBatch{}, err
	}
	return b, s.batchRuns(ctx, &b)
}

func scanBatch(row rowScanner) (SimulationBatch, error) {
	var b SimulationBatch
	var by sql.NullInt64
	var c, u int64
	if err := row.Scan(&b.ID, &b.OrgID, &b.TargetType, &b.TargetID, &b.Count, &b.StaggerSeconds, &by, &c, &u); err != nil {
		return SimulationBatch{}, translate(err)
	}
	if by.Valid {
		b.RequestedByID = &by.Int64
	}
	b.CreatedAt, b.UpdatedAt = fromMS(c), fromMS(u)
	return b, nil
}

func (s *SimulationStore) batchRuns(ctx context.Context, b *SimulationBatch) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, status FROM simulation_runs WHERE batch_id = $1 ORDER BY id`, b.ID)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	b.RunIDs, b.RunStatuses = nil, nil
	for rows.Next() {
		var id int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			return translate(err)
		}
		b.RunIDs, b.RunStatuses = append(b.RunIDs, id), append(b.RunStatuses, st)
	}
	return translate(rows.Err())
}

// BatchStatus is a batch's status from its runs': in_progress while any
// is queued or in progress, else completed when at least one completed,
// else failed.
func BatchStatus(statuses []string) string {
	done := false
	for _, s := range statuses {
		switch s {
		case SimQueued, SimInProgress:
			return SimInProgress
		case SimCompleted:
			done = true
		}
	}
	if done || len(statuses) == 0 {
		return SimCompleted
	}
	return SimFailed
}

// CallIDByExecution finds orgID's call whose worker execution name is
// name (a SIP call's "sip:<Call-ID>").
func (s *SimulationStore) CallIDByExecution(ctx context.Context, orgID int64, name string) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `SELECT id FROM calls WHERE org_id = $1 AND worker_execution_name = $2 ORDER BY id DESC LIMIT 1`,
		orgID, name).Scan(&id)
	return id, translate(err)
}

// MarkCallSimulation flags call id as a simulation (is_simulation): a
// simulated phone call arrives like any other.
func (s *SimulationStore) MarkCallSimulation(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE calls SET is_simulation = TRUE WHERE id = $1`, id)
	return translate(err)
}

// CreateTestRunSimulations stores test run tr (in_progress) and its
// runs (queued, each with the test run's id) in one transaction, unless
// the org would then have more than limit runs queued or in progress
// (ErrSimulationLimit); a scheduled test run (ScheduledFor set) whose
// suite already has a run for that slot is ErrConflict. runsJSON builds the test run's runs array from
// the stored runs (their ids are known only then).
func (s *SimulationStore) CreateTestRunSimulations(ctx context.Context, tr TestRun, runs []SimulationRun, limit int,
	runsJSON func([]SimulationRun) json.RawMessage) (TestRun, []SimulationRun, error) {
	now := s.nowMS()
	var out []SimulationRun
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockAccount(ctx, tx, tr.OrgID); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := checkActive(ctx, tx, tr.OrgID, len(runs), limit); err != nil {
			return err
		}
		if tr.Verdict == "" {
			tr.Verdict = "unknown"
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO test_runs (org_id, agent_id, suite_id, status, channel, verdict, total_count, prompt_hash,
			runs, regressions, created_at, scheduled_for) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '[]', '[]', $9, $10) RETURNING id`,
			tr.OrgID, tr.AgentID, nullStr(tr.SuiteID), tr.Status, tr.Channel, tr.Verdict, tr.TotalCount, tr.PromptHash, now, nullMS(tr.ScheduledFor)).Scan(&tr.ID); err != nil {
			return translate(err)
		}
		var err error
		if out, err = insertSimRuns(ctx, tx, tr.OrgID, nil, &tr.ID, runs, now); err != nil {
			return err
		}
		tr.Runs, tr.Regressions, tr.CreatedAt = runsJSON(out), json.RawMessage("[]"), fromMS(now)
		_, err = tx.ExecContext(ctx, `UPDATE test_runs SET runs = $1 WHERE id = $2`, string(tr.Runs), tr.ID)
		return translate(err)
	})
	if err != nil {
		return TestRun{}, nil, err
	}
	return tr, out, nil
}

// TestRunSimulations returns the runs of test run id, oldest first.
func (s *SimulationStore) TestRunSimulations(ctx context.Context, orgID, testRunID int64) ([]SimulationRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+simCols+` FROM simulation_runs WHERE org_id = $1 AND test_run_id = $2 ORDER BY id`, orgID, testRunID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []SimulationRun{}
	for rows.Next() {
		r, err := scanSim(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// FinishTestRun records test run tr's outcome (status, verdict, counts,
// pass rate, runs array, regressions, verdict reason, critical failure
// count, baseline, completed_at) and its scenarios' latest
// verdicts, in one transaction, once: a test run already completed is
// left as it is (false).
func (s *SimulationStore) FinishTestRun(ctx context.Context, tr TestRun, scenarioVerdicts map[int64]string) (bool, error) {
	now := s.nowMS()
	done := false
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var rate any
		if tr.PassRate != nil {
			rate = *tr.PassRate
		}
		res, err := tx.ExecContext(ctx, `UPDATE test_runs SET status = $1, verdict = $2, total_count = $3, pass_count = $4, fail_count = $5,
			pass_rate = $6, runs = $7, completed_at = $8, regressions = $11, verdict_reason = $12, critical_failure_count = $13, baseline_test_run_id = $14
			WHERE org_id = $9 AND id = $10 AND completed_at IS NULL`,
			tr.Status, tr.Verdict, tr.TotalCount, tr.PassCount, tr.FailCount, rate, rawOr(tr.Runs, "[]"), now, tr.OrgID, tr.ID,
			rawOr(tr.Regressions, "[]"), tr.VerdictReason, tr.CriticalFailureCount, nullInt(tr.BaselineID))
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		for id, v := range scenarioVerdicts {
			if _, err := tx.ExecContext(ctx, `UPDATE test_scenarios SET latest_verdict = $1 WHERE org_id = $2 AND id = $3`, v, tr.OrgID, id); err != nil {
				return translate(err)
			}
		}
		done = true
		return nil
	})
	return done, err
}
