-- +goose Up
-- Realtime session tokens (spec 4.14): what POST /v1/realtime/sessions
-- admitted (the web call and its agent or inline configuration), waiting
-- for the WebSocket that presents the token. Kept here rather than in one
-- control replica's memory so that any replica (or media node) behind a
-- balancer can redeem it. A row lives until the token is claimed (deleted
-- by the claim, once) or expires (deleted by the sweep that closes the
-- call as not joined). nonce_hash is the SHA-256 of the token's nonce;
-- grant_json the admitted call; timestamps are BIGINT milliseconds.
CREATE TABLE realtime_session_tokens (
    id {{ID}},
    call_id BIGINT NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    nonce_hash TEXT NOT NULL,
    grant_json TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX realtime_session_tokens_call ON realtime_session_tokens (call_id);
CREATE INDEX realtime_session_tokens_expiry ON realtime_session_tokens (expires_at);

-- +goose Down
DROP TABLE realtime_session_tokens;
