-- +goose Up
-- A call's media quality (docs/decisions.md, "Call quality"): a JSON
-- object the media side measures over the whole call and control stores
-- when the call ends (packets, loss, jitter, jitter-buffer drops,
-- concealment, round trip, the E-model MOS, dead air, talk-over and the
-- agent's response latency). NULL for calls that never had media
-- (refused, failed before answer) and for calls still in progress.
ALTER TABLE calls ADD COLUMN quality TEXT;

-- +goose Down
ALTER TABLE calls DROP COLUMN quality;
