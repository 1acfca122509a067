-- +goose Up
-- Loss of a media node (docs/decisions.md, "Loss of a media node"):
-- node_id is the media node that holds a call of a scaled-out deployment,
-- set when the node admits or claims it through the internal API (or the
-- control plane places it there); NULL for the all-in-one serve, whose
-- calls live and die with the process that records them. The partial
-- index is what the reaper reads every second: the nodes that hold live
-- calls, and one node's live calls.
ALTER TABLE calls ADD COLUMN node_id TEXT;
CREATE INDEX calls_live_node ON calls (node_id) WHERE status = 'in_progress' AND node_id IS NOT NULL;

-- The last heartbeat the control plane saw of each media node (ms, on the
-- registry's clock), written by the reaper while it holds its lock: a
-- node lost mid-call has its calls billed up to it. A row goes once the
-- node is gone and holds no live call.
CREATE TABLE media_nodes (
    id TEXT PRIMARY KEY,
    last_seen BIGINT NOT NULL
);

-- +goose Down
DROP TABLE media_nodes;
DROP INDEX calls_live_node;
ALTER TABLE calls DROP COLUMN node_id;
