-- +goose Up
-- When the callee answered an outbound call (ms, like start_time): the
-- live call reports it the moment it happens (in serve in process, from a
-- media node through the internal API), and Finish records it at the
-- latest. An outbound call's duration_seconds, so its bill, runs from
-- it: the ringing before is not billed. NULL for a call not (yet)
-- answered and for inbound, web and test calls, whose start_time is
-- their answer. The reaper ends an outbound call of a lost node that was
-- never answered as failed, at no charge (docs/decisions.md, "Loss of a
-- media node").
ALTER TABLE calls ADD COLUMN answered_at BIGINT;

-- +goose Down
ALTER TABLE calls DROP COLUMN answered_at;
