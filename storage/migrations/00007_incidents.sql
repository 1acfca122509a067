-- +goose Up
-- Monitoring incidents (spec 4.1): alerts posted by Azure Monitor and
-- GlitchTip to /v1/monitoring/*. A platform table, not an org's: incidents
-- are about the service. One row per alert while it is open: a repeat of
-- the same (source, alert_key) before it resolves bumps count and
-- last_seen_at instead (the partial unique index is the upsert's target).
-- ack_token_hash is the SHA-256 of the single-use acknowledgement token;
-- it is kept after use so a second tap answers 410, not 404. rule is the
-- alert rule's name (auto-ack matches it); title and description are the
-- monitor's own text, for operators only. Timestamps are BIGINT ms.
CREATE TABLE incidents (
    id {{ID}},
    source TEXT NOT NULL CHECK (source IN ('azure', 'glitchtip')),
    alert_key TEXT NOT NULL,
    rule TEXT NOT NULL,
    product TEXT NOT NULL,
    severity TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    count BIGINT NOT NULL DEFAULT 1,
    started_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    acked_at BIGINT,
    resolved_at BIGINT,
    ack_token_hash TEXT NOT NULL
);
CREATE UNIQUE INDEX incidents_open ON incidents (source, alert_key) WHERE resolved_at IS NULL;
CREATE UNIQUE INDEX incidents_ack_token ON incidents (ack_token_hash);
CREATE INDEX incidents_rule ON incidents (rule) WHERE resolved_at IS NULL;

-- +goose Down
DROP TABLE incidents;
