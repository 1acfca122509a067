package storage_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestMCPServers(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		st := f.s.MCPServers
		now := time.Now()
		m, err := st.CreateMCPServer(ctx, storage.MCPServer{OrgID: f.org.ID, DisplayName: "CRM", URL: "https://mcp.example.com/mcp", Transport: "streamable_http",
			Headers: []storage.MCPHeader{{Key: "Authorization", Value: "Bearer very-secret"}}, Enabled: true,
			CachedTools: json.RawMessage(`[{"type":"function"}]`), LastToolsSyncAt: &now})
		require.NoError(t, err)
		require.Len(t, m.ID, 36)

		var raw string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT headers FROM mcp_servers WHERE id = $1`, m.ID).Scan(&raw))
		require.NotContains(t, raw, "very-secret", "header values are sealed at rest")
		require.NotContains(t, raw, "Authorization")

		got, err := st.MCPServer(ctx, f.org.ID, m.ID)
		require.NoError(t, err)
		require.Equal(t, []storage.MCPHeader{{Key: "Authorization", Value: "Bearer very-secret"}}, got.Headers)
		require.JSONEq(t, `[{"type":"function"}]`, string(got.CachedTools))
		require.Equal(t, now.UnixMilli(), got.LastToolsSyncAt.UnixMilli())

		_, err = st.CreateMCPServer(ctx, storage.MCPServer{OrgID: f.org.ID, DisplayName: "crm", URL: "https://x.example.com", Transport: "streamable_http"})
		require.ErrorIs(t, err, storage.ErrConflict, "names are unique case-insensitively")
		other, err := st.CreateMCPServer(ctx, storage.MCPServer{OrgID: f.org.ID, DisplayName: "Docs", URL: "https://x.example.com", Transport: "streamable_http"})
		require.NoError(t, err)
		require.Empty(t, other.Headers)

		got.DisplayName, got.Enabled = "CRM two", false
		_, err = st.UpdateMCPServer(ctx, got)
		require.NoError(t, err)
		other.DisplayName = "crm TWO"
		_, err = st.UpdateMCPServer(ctx, other)
		require.ErrorIs(t, err, storage.ErrConflict)

		list, err := st.MCPServers(ctx, f.org.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "CRM two", list[0].DisplayName)
		require.False(t, list[0].Enabled)

		_, err = st.MCPServer(ctx, f.org.ID+1000, m.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.NoError(t, st.DeleteMCPServer(ctx, f.org.ID, m.ID))
		require.ErrorIs(t, st.DeleteMCPServer(ctx, f.org.ID, m.ID), storage.ErrNotFound)
	})
}
