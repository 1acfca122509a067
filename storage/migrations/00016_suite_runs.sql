-- +goose Up
-- Suite runs and schedules (spec 2.12, 4.8; docs/decisions.md "Suite runs,
-- schedules and regressions").
-- A scheduled suite keeps its next due time (next_run_at, ms; null when
-- the schedule is none or the suite is disabled) and the lease of the
-- scheduler that is starting it (schedule_owner, schedule_lease_until).
ALTER TABLE test_suites ADD COLUMN next_run_at BIGINT;
ALTER TABLE test_suites ADD COLUMN schedule_owner TEXT;
ALTER TABLE test_suites ADD COLUMN schedule_lease_until BIGINT;
CREATE INDEX test_suites_due ON test_suites (next_run_at);
-- A test run started by a schedule remembers its slot (scheduled_for,
-- the suite's next_run_at it was started for): unique per suite, so a
-- slot runs once whichever replica starts it. error_message says why a
-- scheduled run could not start; verdict_reason why a suite run passed
-- or failed; critical_failure_count counts its calls with a critical
-- issue report; baseline_test_run_id is the run regressions were
-- computed against.
ALTER TABLE test_runs ADD COLUMN scheduled_for BIGINT;
ALTER TABLE test_runs ADD COLUMN error_message TEXT NOT NULL DEFAULT '';
ALTER TABLE test_runs ADD COLUMN verdict_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE test_runs ADD COLUMN critical_failure_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE test_runs ADD COLUMN baseline_test_run_id BIGINT;
CREATE UNIQUE INDEX test_runs_slot ON test_runs (suite_id, scheduled_for);

-- +goose Down
DROP INDEX test_runs_slot;
ALTER TABLE test_runs DROP COLUMN baseline_test_run_id;
ALTER TABLE test_runs DROP COLUMN critical_failure_count;
ALTER TABLE test_runs DROP COLUMN verdict_reason;
ALTER TABLE test_runs DROP COLUMN error_message;
ALTER TABLE test_runs DROP COLUMN scheduled_for;
DROP INDEX test_suites_due;
ALTER TABLE test_suites DROP COLUMN schedule_lease_until;
ALTER TABLE test_suites DROP COLUMN schedule_owner;
ALTER TABLE test_suites DROP COLUMN next_run_at;
