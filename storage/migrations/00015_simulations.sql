-- +goose Up
-- Simulation runs and batches (spec 2.11, 3, 4.7). A run is its own job
-- queue row: queued runs are claimed by a worker under a lease
-- (lease_owner, lease_until), then in_progress, then completed or
-- failed. metadata is JSON text (internal diagnostics: the simulated
-- caller's voice, channel, end); transcript the JSON array the run
-- copied from its call. Timestamps are BIGINT ms.
CREATE TABLE simulation_batches (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    target_type TEXT NOT NULL,
    target_id BIGINT NOT NULL,
    count BIGINT NOT NULL,
    stagger_seconds BIGINT NOT NULL,
    requested_by_id BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX simulation_batches_org ON simulation_batches (org_id, id);

CREATE TABLE simulation_runs (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    batch_id BIGINT REFERENCES simulation_batches (id) ON DELETE SET NULL,
    target_type TEXT NOT NULL CHECK (target_type IN ('agent', 'phone_number')),
    target_id BIGINT,
    target_name TEXT NOT NULL DEFAULT '',
    agent_id BIGINT,
    agent_name TEXT,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    mode TEXT NOT NULL CHECK (mode IN ('bot', 'sip')),
    target_number TEXT NOT NULL DEFAULT '',
    scenario_prompt TEXT NOT NULL DEFAULT '',
    language TEXT NOT NULL DEFAULT '',
    simulator_product TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'in_progress', 'completed', 'failed')),
    charge_multiplier DOUBLE PRECISION NOT NULL,
    estimated_cost_cents BIGINT,
    charged_cents BIGINT,
    call_id BIGINT,
    error_message TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    transcript TEXT NOT NULL DEFAULT '[]',
    requested_by_id BIGINT,
    not_before BIGINT NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until BIGINT NOT NULL DEFAULT 0,
    attempts BIGINT NOT NULL DEFAULT 0,
    duration_seconds BIGINT,
    started_at BIGINT,
    completed_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX simulation_runs_org ON simulation_runs (org_id, id);
CREATE INDEX simulation_runs_due ON simulation_runs (status, not_before);
CREATE INDEX simulation_runs_batch ON simulation_runs (batch_id, id);

-- +goose Down
DROP TABLE simulation_runs;
DROP TABLE simulation_batches;
