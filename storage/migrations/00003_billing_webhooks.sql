-- +goose Up
-- Prepaid billing (payment provider state, auto-reload queue) and webhook
-- delivery (endpoints, a durable outbox of events and per-destination
-- deliveries). Portable SQL for SQLite and PostgreSQL; {{ID}} is a 64-bit
-- auto-increment primary key; timestamps are BIGINT milliseconds since the
-- Unix epoch (UTC); JSON is stored as TEXT.

-- The provider's customer for the org, created on first use, and the time
-- an auto-reload last failed for a reason only the user can fix (a decline,
-- 3-D Secure off-session): reloads stay off until the payment method or the
-- settings change.
ALTER TABLE billing_accounts ADD COLUMN provider_customer_id TEXT;
ALTER TABLE billing_accounts ADD COLUMN auto_reload_failed_at BIGINT;

-- Payment intents this server created. A provider event credits the org the
-- row names; the ledger's unique (org, kind, reference) credits it once.
CREATE TABLE billing_payments (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    purpose TEXT NOT NULL CHECK (purpose IN ('top_up', 'auto_reload')),
    amount_cents BIGINT NOT NULL,
    status TEXT NOT NULL,
    reload_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX billing_payments_org ON billing_payments (org_id, created_at);

-- Auto-reload attempts: a durable queue the reload worker drains. The id is
-- the provider idempotency key of the attempt. The partial unique index is
-- what keeps at most one reload in flight per org however many debits cross
-- the threshold at once.
CREATE TABLE billing_reloads (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    amount_cents BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'succeeded', 'failed')),
    tries INTEGER NOT NULL DEFAULT 0,
    next_try_at BIGINT NOT NULL,
    lease_until BIGINT,
    lease_token TEXT,
    payment_intent_id TEXT,
    error_code TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX billing_reloads_in_flight ON billing_reloads (org_id) WHERE status IN ('pending', 'processing');
CREATE INDEX billing_reloads_due ON billing_reloads (status, next_try_at);
CREATE INDEX billing_reloads_org_month ON billing_reloads (org_id, created_at);

-- Provider events already applied: a replayed event changes nothing.
CREATE TABLE billing_provider_events (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    received_at BIGINT NOT NULL
);

-- Webhook endpoints (spec 2.6). events is a JSON array; empty means all.
-- The secret is sealed with the store's secret key (it signs every delivery).
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL CHECK (status IN ('active', 'disabled', 'failing')),
    secret_enc TEXT NOT NULL,
    secret_hint TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, created_at);

-- The outbox: one row per emitted event, written in the same transaction as
-- the state change that emits it. data is the event's JSON object.
CREATE TABLE webhook_events (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_events_org ON webhook_events (org_id, created_at);

-- One row per (event, destination): an endpoint, or the org's legacy URL
-- when endpoint_id is NULL. Deleting an endpoint deletes its deliveries,
-- which abandons in-flight retries. A worker owns a row while lease_until
-- is in the future; a worker that dies simply lets the lease run out.
CREATE TABLE webhook_deliveries (
    id {{ID}},
    event_id TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    endpoint_id TEXT REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    first_attempt_at BIGINT,
    next_attempt_at BIGINT NOT NULL,
    lease_until BIGINT,
    lease_token TEXT,
    last_status_code INTEGER,
    last_error TEXT NOT NULL DEFAULT '',
    delivered_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, status);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_lease ON webhook_deliveries (lease_token);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
DROP TABLE webhook_endpoints;
DROP TABLE billing_provider_events;
DROP TABLE billing_reloads;
DROP TABLE billing_payments;
ALTER TABLE billing_accounts DROP COLUMN auto_reload_failed_at;
ALTER TABLE billing_accounts DROP COLUMN provider_customer_id;
