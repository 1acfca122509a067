-- +goose Up
-- MCP servers an org's agents use as tools (spec 2.17, 4.12). id is a
-- UUID. name_key is display_name lowercased: names are unique per org
-- case-insensitively. headers is the sealed (AES-GCM, the store's secret
-- key) JSON array of {key, value}: values are secrets and never leave the
-- control plane except towards the MCP server. cached_tools is the JSON
-- array of the tools the last sync found (function-format definitions);
-- a call offers these without fetching. Timestamps are BIGINT ms.
CREATE TABLE mcp_servers (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
    display_name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    url TEXT NOT NULL,
    transport TEXT NOT NULL CHECK (transport IN ('streamable_http')),
    headers TEXT NOT NULL,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    cached_tools TEXT NOT NULL DEFAULT '[]',
    last_tools_sync_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX mcp_servers_name ON mcp_servers (org_id, name_key);

-- +goose Down
DROP TABLE mcp_servers;
