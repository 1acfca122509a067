package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
)

// MCPServerStore keeps the MCP servers an organization's agents use as
// tools (spec 2.17). Header values are sealed at rest.
type MCPServerStore struct{ *base }

// MCPHeader is one HTTP header sent to an MCP server. Value is a secret.
type MCPHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// MCPServer is a registered MCP server. CachedTools is the JSON array of
// the tools its last sync found, as the control plane renders them.
type MCPServer struct {
	ID              string
	OrgID           int64
	DisplayName     string
	URL             string
	Transport       string
	Headers         []MCPHeader
	Enabled         bool
	CachedTools     json.RawMessage
	LastToolsSyncAt *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

const mcpSelect = `SELECT id, org_id, display_name, url, transport, headers, enabled, cached_tools, last_tools_sync_at, created_at, updated_at FROM mcp_servers`

func (s *MCPServerStore) scan(row rowScanner) (MCPServer, error) {
	var m MCPServer
	var sealed, tools string
	var synced sql.NullInt64
	var created, updated int64
	if err := row.Scan(&m.ID, &m.OrgID, &m.DisplayName, &m.URL, &m.Transport, &sealed, &m.Enabled, &tools, &synced, &created, &updated); err != nil {
		return MCPServer{}, translate(err)
	}
	plain, err := s.open(sealed)
	if err != nil {
		return MCPServer{}, err
	}
	if err := json.Unmarshal([]byte(plain), &m.Headers); err != nil {
		return MCPServer{}, err
	}
	m.CachedTools = json.RawMessage(tools)
	if synced.Valid {
		t := fromMS(synced.Int64)
		m.LastToolsSyncAt = &t
	}
	m.CreatedAt, m.UpdatedAt = fromMS(created), fromMS(updated)
	return m, nil
}

func (s *MCPServerStore) sealHeaders(h []MCPHeader) (string, error) {
	if h == nil {
		h = []MCPHeader{}
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	return s.seal(string(b))
}

// CreateMCPServer stores m and returns it; the ID is m's when set (the
// cached tools name it) or a new UUID, and timestamps are set here.
// A display name already used in the org, in any case, is ErrConflict.
func (s *MCPServerStore) CreateMCPServer(ctx context.Context, m MCPServer) (MCPServer, error) {
	sealed, err := s.sealHeaders(m.Headers)
	if err != nil {
		return MCPServer{}, err
	}
	if len(m.CachedTools) == 0 {
		m.CachedTools = json.RawMessage("[]")
	}
	if m.ID == "" {
		m.ID = NewUUID()
	}
	m.CreatedAt = fromMS(s.nowMS())
	m.UpdatedAt = m.CreatedAt
	var synced sql.NullInt64
	if m.LastToolsSyncAt != nil {
		synced = sql.NullInt64{Int64: ms(*m.LastToolsSyncAt), Valid: true}
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO mcp_servers (id, org_id, display_name, name_key, url, transport, headers, enabled, cached_tools, last_tools_sync_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		m.ID, m.OrgID, m.DisplayName, strings.ToLower(m.DisplayName), m.URL, m.Transport, sealed, m.Enabled, string(m.CachedTools), synced, ms(m.CreatedAt), ms(m.UpdatedAt))
	if err != nil {
		return MCPServer{}, translate(err)
	}
	return m, nil
}

// MCPServer returns the server id of org orgID.
func (s *MCPServerStore) MCPServer(ctx context.Context, orgID int64, id string) (MCPServer, error) {
	return s.scan(s.db.QueryRowContext(ctx, mcpSelect+` WHERE org_id = $1 AND id = $2`, orgID, id))
}

// MCPServers lists orgID's servers, oldest first.
func (s *MCPServerStore) MCPServers(ctx context.Context, orgID int64) ([]MCPServer, error) {
	rows, err := s.db.QueryContext(ctx, mcpSelect+` WHERE org_id = $1 ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []MCPServer{}
	for rows.Next() {
		m, err := s.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// UpdateMCPServer writes every mutable field of m (display name, URL,
// transport, headers, enabled, cached tools, sync time) and bumps
// updated_at. A name taken in the org is ErrConflict.
func (s *MCPServerStore) UpdateMCPServer(ctx context.Context, m MCPServer) (MCPServer, error) {
	sealed, err := s.sealHeaders(m.Headers)
	if err != nil {
		return MCPServer{}, err
	}
	var synced sql.NullInt64
	if m.LastToolsSyncAt != nil {
		synced = sql.NullInt64{Int64: ms(*m.LastToolsSyncAt), Valid: true}
	}
	m.UpdatedAt = fromMS(s.nowMS())
	res, err := s.db.ExecContext(ctx, `UPDATE mcp_servers SET display_name = $1, name_key = $2, url = $3, transport = $4, headers = $5, enabled = $6,
		cached_tools = $7, last_tools_sync_at = $8, updated_at = $9 WHERE org_id = $10 AND id = $11`,
		m.DisplayName, strings.ToLower(m.DisplayName), m.URL, m.Transport, sealed, m.Enabled, string(m.CachedTools), synced, ms(m.UpdatedAt), m.OrgID, m.ID)
	if err != nil {
		return MCPServer{}, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return MCPServer{}, ErrNotFound
	}
	return m, nil
}

// DeleteMCPServer removes the server id of org orgID.
func (s *MCPServerStore) DeleteMCPServer(ctx context.Context, orgID int64, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_servers WHERE org_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
