-- +goose Up
-- Call grading (docs/decisions.md, "Call grading and issue reports"):
-- one queued grading per finished call, claimed under a lease by any
-- replica's worker and retried with backoff until attempts run out.
CREATE TABLE grade_jobs (
    call_id BIGINT PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
    org_id BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until BIGINT NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX grade_jobs_due ON grade_jobs (status, next_attempt_at);

-- Issue reports, filed by users or by grading (source system). A system
-- report is keyed by its detected_issue_ref so that re-grading a call
-- does not file the same issue twice.
CREATE TABLE issue_reports (
    id {{ID}},
    trace_id TEXT NOT NULL UNIQUE,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    call_id BIGINT NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
    agent_id BIGINT,
    source TEXT NOT NULL CHECK (source IN ('user', 'system')),
    severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    severity_rank INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'acknowledged', 'resolved')),
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    what_went_wrong TEXT NOT NULL DEFAULT '',
    suggested_fix TEXT NOT NULL DEFAULT '',
    timestamp_seconds BIGINT,
    failing_turn_index BIGINT,
    detected_issue_ref TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    reported_by_id BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX issue_reports_org ON issue_reports (org_id, severity_rank, created_at);
CREATE INDEX issue_reports_call ON issue_reports (call_id);
CREATE UNIQUE INDEX issue_reports_detected ON issue_reports (call_id, detected_issue_ref);

-- +goose Down
DROP TABLE issue_reports;
DROP TABLE grade_jobs;
