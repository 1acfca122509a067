-- +goose Up
-- Agents, VoIP connections, phone numbers and their labels, calls with their
-- events and grades, and onboarding state. Portable SQL for SQLite and
-- PostgreSQL; {{ID}} is a 64-bit auto-increment primary key; timestamps are
-- BIGINT milliseconds since the Unix epoch (UTC); JSON is stored as TEXT.

-- An agent's configuration is a JSON object owned by the control plane:
-- config is what calls use (deployed), draft is what is staged.
CREATE TABLE agents (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    config TEXT NOT NULL,
    draft TEXT NOT NULL,
    revision BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deployed_at BIGINT
);
CREATE INDEX agents_org ON agents (org_id, created_at);

-- Versions: created_by_id is a membership id, NULL for system changes.
CREATE TABLE agent_versions (
    id {{ID}},
    agent_id BIGINT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    revision BIGINT NOT NULL,
    snapshot TEXT NOT NULL,
    changed_fields TEXT NOT NULL,
    created_by_id BIGINT,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX agent_versions_revision ON agent_versions (agent_id, revision);

-- SIP trunks. The password is sealed with the store's secret key.
CREATE TABLE voip_connections (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    host TEXT NOT NULL,
    port INTEGER NOT NULL,
    transport TEXT NOT NULL CHECK (transport IN ('udp', 'tcp', 'tls')),
    username TEXT NOT NULL DEFAULT '',
    password_enc TEXT,
    outbound_proxy TEXT NOT NULL DEFAULT '',
    allowed_sources TEXT NOT NULL DEFAULT '[]',
    codecs TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX voip_connections_org ON voip_connections (org_id, created_at);

-- A number belongs to one org at a time: the unique index on number is
-- what makes concurrent allocation from the demo pool safe. Deleting the
-- row returns a demo number to the pool.
CREATE TABLE phone_numbers (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    number TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL CHECK (source IN ('demo', 'voip')),
    status TEXT NOT NULL CHECK (status IN ('provisioning', 'active', 'failed', 'released')),
    inbound_agent_id BIGINT REFERENCES agents (id) ON DELETE SET NULL,
    outbound_agent_id BIGINT REFERENCES agents (id) ON DELETE SET NULL,
    voip_connection_id BIGINT REFERENCES voip_connections (id) ON DELETE CASCADE,
    voip_verification_status TEXT NOT NULL DEFAULT 'unverified' CHECK (voip_verification_status IN ('unverified', 'verified', 'failed')),
    voip_last_verified_at BIGINT,
    area_code TEXT NOT NULL DEFAULT '',
    city TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT '',
    revision BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX phone_numbers_number ON phone_numbers (number);
CREATE INDEX phone_numbers_org ON phone_numbers (org_id, created_at);
CREATE INDEX phone_numbers_status ON phone_numbers (status, source);

CREATE TABLE phone_number_versions (
    id {{ID}},
    phone_number_id BIGINT NOT NULL REFERENCES phone_numbers (id) ON DELETE CASCADE,
    revision BIGINT NOT NULL,
    snapshot TEXT NOT NULL,
    changed_fields TEXT NOT NULL,
    created_by_id BIGINT,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX phone_number_versions_revision ON phone_number_versions (phone_number_id, revision);

CREATE TABLE phone_number_labels (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    phone_number TEXT NOT NULL,
    label TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX phone_number_labels_number ON phone_number_labels (org_id, phone_number);

-- Calls keep agent and number ids as history: no foreign keys, so deleting
-- an agent or a number never rewrites or removes a call.
CREATE TABLE calls (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    agent_id BIGINT,
    agent_variant_id BIGINT,
    agent_variant_label TEXT,
    phone_number_id BIGINT,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound', 'test', 'web')),
    from_number TEXT NOT NULL DEFAULT '',
    to_number TEXT NOT NULL DEFAULT '',
    start_time BIGINT NOT NULL,
    end_time BIGINT,
    duration_seconds BIGINT,
    status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
    end_reason TEXT,
    end_detail TEXT NOT NULL DEFAULT '',
    recording_url TEXT,
    recording_key TEXT NOT NULL DEFAULT '',
    recording_started_at BIGINT,
    is_simulation BOOLEAN NOT NULL DEFAULT FALSE,
    is_scenario_call BOOLEAN NOT NULL DEFAULT FALSE,
    prompt_snapshot TEXT,
    tool_snapshot TEXT,
    worker_execution_name TEXT,
    media_room_name TEXT,
    media_room_sid TEXT,
    product TEXT,
    voice TEXT,
    billable_minutes DOUBLE PRECISION,
    billing_total_cents BIGINT,
    billed_at BIGINT,
    grade_score INTEGER,
    grade_status TEXT,
    grade_updated_at BIGINT,
    call_outcome TEXT,
    issue_count INTEGER NOT NULL DEFAULT 0,
    critical_issue_count INTEGER NOT NULL DEFAULT 0,
    event_seq BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX calls_org_start ON calls (org_id, start_time, id);
CREATE INDEX calls_org_agent ON calls (org_id, agent_id, start_time);
CREATE INDEX calls_status ON calls (status, start_time);

-- What happened during a call, in order. event_id makes appends idempotent
-- when the media side redelivers.
CREATE TABLE call_events (
    call_id BIGINT NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    event_id TEXT,
    kind TEXT NOT NULL,
    at BIGINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (call_id, seq)
);
CREATE UNIQUE INDEX call_events_event_id ON call_events (call_id, event_id) WHERE event_id IS NOT NULL;

CREATE TABLE call_grades (
    id {{ID}},
    call_id BIGINT NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
    score INTEGER,
    call_outcome TEXT,
    outcome_reasoning TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    rubric_breakdown TEXT NOT NULL DEFAULT '{}',
    detected_issues TEXT NOT NULL DEFAULT '[]',
    grader_model TEXT NOT NULL DEFAULT '',
    grader_version TEXT NOT NULL DEFAULT '',
    graded_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX call_grades_call ON call_grades (call_id, id);

-- Onboarding steps are completed once and never revert.
CREATE TABLE onboarding (
    org_id BIGINT PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    agent_at BIGINT,
    billing_at BIGINT,
    phone_at BIGINT,
    call_at BIGINT,
    agent_talk_skipped_at BIGINT,
    dismissed_at BIGINT
);

-- +goose Down
DROP TABLE onboarding;
DROP TABLE call_grades;
DROP TABLE call_events;
DROP TABLE calls;
DROP TABLE phone_number_labels;
DROP TABLE phone_number_versions;
DROP TABLE phone_numbers;
DROP TABLE voip_connections;
DROP TABLE agent_versions;
DROP TABLE agents;
