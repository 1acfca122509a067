package mcp_test

import (
	"context"
	"encoding/json"
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

// crmServer registers a tool server as "CRM" in a new org and returns
// the catalog calls resolve their MCP tools from.
func crmServer(t *testing.T, db *storage.DB) (*controltest.API, *toolServer, controltest.World, string, *mcp.CallCatalog) {
	a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Webhooks: webhook.Config{AllowLoopback: true}})
	ts := newToolServer(t)
	w := a.World()
	r := a.Do("POST", "/v1/mcp-servers", w.AdminK, map[string]any{"display_name": "CRM", "url": ts.URL})
	require.Equal(t, 201, r.Status, string(r.Body))
	cat := mcp.NewCallCatalog(a.Store.MCPServers, mcp.NewConnector(mcp.ConnectorConfig{AllowLoopback: true}), nil)
	return a, ts, w, r.Obj(t)["id"].(string), cat
}

func TestCallTools(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a, ts, w, id, cat := crmServer(t, db)
		r := a.Do("POST", "/v1/mcp-servers", w.AdminK, map[string]any{"display_name": "Off", "url": ts.URL, "enabled": false})
		require.Equal(t, 201, r.Status, string(r.Body))
		off := r.Obj(t)["id"].(string)
		ts.inits.Store(0)
		ctx := context.Background()
		ct, err := cat.ForCall(ctx, w.Org.ID, []string{id, off, storage.NewUUID()}, 40)
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

		other, err := cat.ForCall(ctx, w.Org.ID+1000, []string{id}, 40)
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

// TestCallToolSearch: over the threshold the model is offered only
// tool_search; a search returns the matching definitions, best first,
// and makes them callable; tools not found yet do not run.
func TestCallToolSearch(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		_, _, w, id, cat := crmServer(t, db)
		ctx := context.Background()

		at, err := cat.ForCall(ctx, w.Org.ID, []string{id}, 3)
		require.NoError(t, err)
		require.Len(t, at.Specs, 3, "3 tools are not over a threshold of 3")
		at.Close()

		ct, err := cat.ForCall(ctx, w.Org.ID, []string{id}, 2)
		require.NoError(t, err)
		defer ct.Close()
		require.Len(t, ct.Specs, 1)
		require.Equal(t, mcp.SearchTool, ct.Specs[0].Name)
		require.Contains(t, ct.Specs[0].Description, "3 tools of these services: CRM")
		require.JSONEq(t, `{"type":"object","properties":{"query":{"type":"string","description":"what the tool should do, in a few words"}},"required":["query"]}`, string(ct.Specs[0].Parameters))

		echo := mcp.ToolName(id, "echo")
		_, err = ct.Run(ctx, echo, `{"text":"hi"}`)
		require.ErrorContains(t, err, "not loaded: call tool_search first")
		_, err = ct.Run(ctx, mcp.SearchTool, `{}`)
		require.ErrorContains(t, err, "needs a query")

		search := func(q string) (names []string, note string) {
			out, err := ct.Run(ctx, mcp.SearchTool, `{"query":`+strconvQuote(q)+`}`)
			require.NoError(t, err)
			var res struct {
				Tools []struct {
					Name        string         `json:"name"`
					Description string         `json:"description"`
					Parameters  map[string]any `json:"parameters"`
				} `json:"tools"`
				Note string `json:"note"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
			for _, tl := range res.Tools {
				require.Equal(t, "object", tl.Parameters["type"], tl.Name)
				names = append(names, tl.Name)
			}
			return names, res.Note
		}
		names, note := search("echo some TEXT back")
		require.Equal(t, []string{echo}, names)
		require.Equal(t, "These tools can be called now.", note)
		require.Equal(t, echo, ct.Loaded()[0].Name)
		require.Contains(t, string(ct.Loaded()[0].Parameters), `"text"`)
		out, err := ct.Run(ctx, echo, `{"text":"hi"}`)
		require.NoError(t, err)
		require.Equal(t, "echo: hi", out)

		// A name match (3) ranks above a description match (1).
		names, _ = search("customer fails")
		require.Equal(t, []string{mcp.ToolName(id, "look.up customer!"), mcp.ToolName(id, "boom")}, names)
		require.Len(t, ct.Loaded(), 3, "found tools stay loaded, each once")
		names, note = search("weather")
		require.Empty(t, names)
		require.Equal(t, "No tool matches; search again with other words.", note)
		require.Len(t, ct.Loaded(), 3)
	})
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
