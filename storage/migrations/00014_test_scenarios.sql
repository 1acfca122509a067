-- +goose Up
-- Test scenarios, suites and test runs (spec 2.12, 4.8). The nested
-- scenario objects (audio_conditions, speech_style, caller_behavior,
-- telephony) and labels are JSON text validated by control/scenarios.
-- A production scenario remembers the call (and issue) it was promoted
-- from; promote_key (call id + issue trace id, "" for none) makes a
-- repeated promotion find the first one. Timestamps are BIGINT ms.
CREATE TABLE test_scenarios (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    agent_id BIGINT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    scenario_prompt TEXT NOT NULL,
    labels TEXT NOT NULL DEFAULT '[]',
    audio_conditions TEXT NOT NULL,
    speech_style TEXT NOT NULL,
    caller_behavior TEXT NOT NULL,
    telephony TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    source TEXT NOT NULL CHECK (source IN ('manual', 'ai', 'production')),
    prompt_hash TEXT NOT NULL DEFAULT '',
    source_call_id BIGINT,
    source_issue_trace_id TEXT,
    source_turn_index BIGINT,
    promote_key TEXT,
    latest_verdict TEXT NOT NULL DEFAULT 'unknown' CHECK (latest_verdict IN ('pass', 'fail', 'unknown')),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX test_scenarios_agent ON test_scenarios (org_id, agent_id, id);
CREATE UNIQUE INDEX test_scenarios_promote ON test_scenarios (org_id, promote_key);

-- A suite: a named set of one agent's scenarios (UUID id). scenario_ids
-- is a JSON array of scenario ids.
CREATE TABLE test_suites (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    agent_id BIGINT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    scenario_ids TEXT NOT NULL DEFAULT '[]',
    min_pass_rate DOUBLE PRECISION NOT NULL,
    no_critical_failures BOOLEAN NOT NULL DEFAULT FALSE,
    schedule TEXT NOT NULL CHECK (schedule IN ('none', 'hourly', 'daily', 'weekly')),
    channel TEXT NOT NULL CHECK (channel IN ('web', 'telephony')),
    phone_number_id BIGINT,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX test_suites_org ON test_suites (org_id, created_at);

-- A test run (a simulation batch over scenarios) of an agent, optionally
-- for a suite. runs is the JSON array of per-run items ({scenario_id,
-- call_id, verdict, ...}); regressions the JSON array the suite rule
-- computed.
CREATE TABLE test_runs (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    agent_id BIGINT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    suite_id TEXT REFERENCES test_suites (id) ON DELETE SET NULL,
    status TEXT NOT NULL,
    channel TEXT NOT NULL,
    verdict TEXT NOT NULL DEFAULT 'unknown',
    total_count BIGINT NOT NULL DEFAULT 0,
    pass_count BIGINT NOT NULL DEFAULT 0,
    fail_count BIGINT NOT NULL DEFAULT 0,
    pass_rate DOUBLE PRECISION,
    prompt_hash TEXT NOT NULL DEFAULT '',
    runs TEXT NOT NULL DEFAULT '[]',
    regressions TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX test_runs_agent ON test_runs (org_id, agent_id, id);
CREATE INDEX test_runs_suite ON test_runs (suite_id, id);

-- +goose Down
DROP TABLE test_runs;
DROP TABLE test_suites;
DROP TABLE test_scenarios;
