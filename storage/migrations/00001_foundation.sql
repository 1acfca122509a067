-- +goose Up
-- Portable SQL for SQLite and PostgreSQL. Tokens replaced per dialect by
-- migrations.FS: {{ID}} is a 64-bit auto-increment primary key.
-- Timestamps are BIGINT milliseconds since the Unix epoch (UTC).

CREATE TABLE users (
    id {{ID}},
    email TEXT NOT NULL,
    first_name TEXT NOT NULL DEFAULT '',
    last_name TEXT NOT NULL DEFAULT '',
    has_passkey BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX users_email ON users (email);

CREATE TABLE personal_tokens (
    id {{ID}},
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE UNIQUE INDEX personal_tokens_hash ON personal_tokens (token_hash);

CREATE TABLE orgs (
    id {{ID}},
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE memberships (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX memberships_org_user ON memberships (org_id, user_id);
CREATE INDEX memberships_user ON memberships (user_id);
-- Each org has exactly one owner: the database refuses a second.
CREATE UNIQUE INDEX memberships_one_owner ON memberships (org_id) WHERE role = 'owner';

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    created_by BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (key_hash);
CREATE INDEX api_keys_org ON api_keys (org_id, created_at);

CREATE TABLE org_webhooks (
    org_id BIGINT PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    secret_enc TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE invites (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    token_hash TEXT NOT NULL,
    created_by BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    accepted_at BIGINT,
    accepted_by BIGINT,
    revoked_at BIGINT
);
CREATE UNIQUE INDEX invites_token ON invites (token_hash);
CREATE INDEX invites_org ON invites (org_id, created_at);

CREATE TABLE billing_accounts (
    org_id BIGINT PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    balance_cents BIGINT NOT NULL DEFAULT 0 CHECK (balance_cents >= 0),
    auto_reload_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    auto_reload_minimum_cents BIGINT NOT NULL DEFAULT 0,
    auto_reload_amount_cents BIGINT NOT NULL DEFAULT 0,
    auto_reload_monthly_limit_cents BIGINT,
    default_payment_method TEXT,
    has_ever_topped_up BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at BIGINT NOT NULL
);

-- The ledger: every balance change is one row here, written in the same
-- transaction as the balance update.
CREATE TABLE billing_transactions (
    id {{ID}},
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('top_up', 'call_usage', 'number_fee', 'adjustment')),
    amount_cents BIGINT NOT NULL,
    balance_after_cents BIGINT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    reference TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX billing_transactions_org ON billing_transactions (org_id, id);
-- A reference (a payment intent id, a call id) is credited or debited once.
CREATE UNIQUE INDEX billing_transactions_ref ON billing_transactions (org_id, kind, reference) WHERE reference IS NOT NULL;

-- +goose Down
DROP TABLE billing_transactions;
DROP TABLE billing_accounts;
DROP TABLE invites;
DROP TABLE org_webhooks;
DROP TABLE api_keys;
DROP TABLE memberships;
DROP TABLE orgs;
DROP TABLE personal_tokens;
DROP TABLE users;
