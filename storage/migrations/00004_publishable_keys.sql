-- +goose Up
-- Publishable keys (spec 2.5, 4.4): the pk_live_ keys an embeddable widget
-- presents from a browser. They are not secrets (they sit in web pages), so
-- the full value is stored and always retrievable; what guards them is the
-- allowed-domain list checked against the browser's Origin. Portable SQL for
-- SQLite and PostgreSQL; {{ID}} is a 64-bit auto-increment primary key;
-- timestamps are BIGINT milliseconds since the Unix epoch (UTC); JSON is
-- stored as TEXT.

-- allowed_domains is a JSON array of exact hosts and *.suffix wildcards.
-- Deactivation is soft (is_active false, deactivated_at set): the row stays
-- listed and its value stays unique, so a deactivated key never comes back
-- as someone else's. An agent deleted from under an agent-mode key leaves
-- agent_id NULL: the widget then refuses calls until a new agent is set.
CREATE TABLE publishable_keys (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_value TEXT NOT NULL,
    key_prefix TEXT NOT NULL,
    allowed_domains TEXT NOT NULL,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    is_enabled BOOLEAN NOT NULL DEFAULT TRUE,
    mode TEXT NOT NULL CHECK (mode IN ('agent', 'webhook')),
    agent_id BIGINT REFERENCES agents (id) ON DELETE SET NULL,
    webhook_url TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deactivated_at BIGINT
);
CREATE UNIQUE INDEX publishable_keys_value ON publishable_keys (key_value);
CREATE INDEX publishable_keys_org ON publishable_keys (org_id, created_at);

-- +goose Down
DROP TABLE publishable_keys;
