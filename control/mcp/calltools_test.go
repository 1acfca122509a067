package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestCallTools(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Webhooks: webhook.Config{AllowLoopback: true}})
		ts := newToolServer(t)
		w := a.World()
		r := a.Do("POST", "/v1/mcp-servers", w.AdminK, map[string]any{"display_name": "CRM", "url": ts.URL})
		require.Equal(t, 201, r.Status, string(r.Body))
		id := r.Obj(t)["id"].(string)
		r = a.Do("POST", "/v1/mcp-servers", w.AdminK, map[string]any{"display_name": "Off", "url": ts.URL, "enabled": false})
		require.Equal(t, 201, r.Status, string(r.Body))
		off := r.Obj(t)["id"].(string)
		ts.inits.Store(0)

		cat := mcp.NewCallCatalog(a.Store.MCPServers, mcp.NewConnector(mcp.ConnectorConfig{AllowLoopback: true}), nil)
		ctx := context.Background()
		ct, err := cat.ForCall(ctx, w.Org.ID, []string{id, off, storage.NewUUID()})
		require.NoError(t, err)
		defer ct.Close()
		require.Len(t, ct.Specs, 3, "the enabled server's cached tools only")
		require.Zero(t, ts.inits.Load(), "nothing connects or lists tools at call start")

		echo := mcp.ToolName(id, "echo")
		for i := range 3 {
			out, err := ct.Run(ctx, echo, `{"text":"hi"}`)
			require.NoError(t, err, i)
			require.Equal(t, "echo: hi", out)
		}
		require.EqualValues(t, 1, ts.inits.Load(), "one session for the call's life")

		_, err = ct.Run(ctx, mcp.ToolName(id, "boom"), `{}`)
		require.EqualError(t, err, "the CRM is in maintenance", "isError is the tool's failure")

		ts.down.Store(true)
		_, err = ct.Run(ctx, echo, `{"text":"hi"}`)
		require.ErrorIs(t, err, mcp.ErrUnavailable)
		ts.down.Store(false)
		start := time.Now()
		_, err = ct.Run(ctx, echo, `{"text":"hi"}`)
		require.ErrorIs(t, err, mcp.ErrUnavailable, "a server that just failed is not tried again at once")
		require.Less(t, time.Since(start), 50*time.Millisecond, "fails fast")

		ct.Close()
		_, err = ct.Run(ctx, echo, `{"text":"hi"}`)
		require.Error(t, err)

		other, err := cat.ForCall(ctx, w.Org.ID+1000, []string{id})
		require.NoError(t, err)
		require.Empty(t, other.Specs, "another org's server is not offered")
		var names []string
		for _, tl := range ct.Specs {
			require.Equal(t, id, tl.MCP.ServerID)
			names = append(names, tl.MCP.ToolName)
		}
		require.ElementsMatch(t, []string{"echo", "boom", "look.up customer!"}, names)
	})
}
