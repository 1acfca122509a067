package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// toolServer is a real MCP server (go-sdk) on loopback offering tools;
// it records the Authorization header of the last request and can be
// told to refuse everything.
type toolServer struct {
	URL    string
	auth   atomic.Value
	down   atomic.Bool
	inits  atomic.Int32
	server *sdk.Server
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

func newToolServer(t testing.TB) *toolServer {
	ts := &toolServer{server: sdk.NewServer(&sdk.Implementation{Name: "tools", Version: "1"}, nil)}
	sdk.AddTool(ts.server, &sdk.Tool{Name: "echo", Description: "Echo the text."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	sdk.AddTool(ts.server, &sdk.Tool{Name: "boom", Description: "Always fails."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("the CRM is in maintenance")
	})
	sdk.AddTool(ts.server, &sdk.Tool{Name: "look.up customer!", Description: "Odd name."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ts.server }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ts.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		ts.auth.Store(r.Header.Get("Authorization"))
		b, _ := io.ReadAll(r.Body)
		// A session starts with initialize, or server/discover from
		// protocol 2026-07-28 on.
		if bytes.Contains(b, []byte(`"method":"initialize"`)) || bytes.Contains(b, []byte(`"method":"server/discover"`)) {
			ts.inits.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ts.URL = srv.URL + "/mcp"
	return ts
}

func (ts *toolServer) lastAuth() string { s, _ := ts.auth.Load().(string); return s }

func TestMCPServersAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Webhooks: webhook.Config{AllowLoopback: true}})
		ts := newToolServer(t)
		w := a.World()
		body := func(extra map[string]any) map[string]any {
			b := map[string]any{"display_name": "CRM", "url": ts.URL, "headers": []map[string]any{{"key": "Authorization", "value": "Bearer tool-secret"}}}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}

		t.Run("create syncs inline", func(t *testing.T) {
			require.Equal(t, 403, a.Do("POST", "/v1/mcp-servers", w.MembK, body(nil)).Status)
			r := a.Do("POST", "/v1/mcp-servers", w.AdminK, body(nil))
			require.Equal(t, 201, r.Status, string(r.Body))
			m := r.Obj(t)
			id := m["id"].(string)
			require.Len(t, id, 36)
			require.Equal(t, "Bearer tool-secret", ts.lastAuth(), "headers are sent to the server")
			require.Equal(t, "streamable_http", m["transport"])
			require.Equal(t, true, m["enabled"])
			require.NotNil(t, m["last_tools_sync_at"])
			require.Equal(t, []any{map[string]any{"key": "Authorization"}}, m["headers"])
			require.NotContains(t, string(r.Body), "tool-secret")
			tools := m["cached_tools"].([]any)
			require.Len(t, tools, 3)
			byTool := map[string]map[string]any{}
			for _, tl := range tools {
				tm := tl.(map[string]any)
				byTool[tm["mcp"].(map[string]any)["tool_name"].(string)] = tm
				require.Equal(t, id, tm["mcp"].(map[string]any)["server_id"])
				require.Equal(t, "function", tm["type"])
				require.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, tm["name"])
			}
			require.Equal(t, "mcp_"+id+"_echo", byTool["echo"]["name"])
			require.Equal(t, "Echo the text.", byTool["echo"]["description"])
			require.Contains(t, byTool["echo"]["parameters"].(map[string]any)["properties"], "text")
			require.Equal(t, "mcp_"+id+"_look_up_customer_", byTool["look.up customer!"]["name"])

			// Header secrecy per role.
			g := a.Do("GET", "/v1/mcp-servers/"+id, w.MembK, nil).Obj(t)
			require.Equal(t, []any{}, g["headers"], "members see no header names")
			g = a.Do("GET", "/v1/mcp-servers/"+id, w.AdminT+w.OrgHdr(), nil).Obj(t)
			require.Equal(t, []any{map[string]any{"key": "Authorization"}}, g["headers"])
			l := a.Do("GET", "/v1/mcp-servers", w.MembK, nil).List(t)
			require.Len(t, l, 1)
			require.Equal(t, []any{}, l[0]["headers"])

			r = a.Do("POST", "/v1/mcp-servers", w.AdminK, body(map[string]any{"display_name": "crm"}))
			require.Equal(t, 400, r.Status, "names are unique case-insensitively")
			require.Contains(t, r.Obj(t), "display_name")
		})

		t.Run("validation and nothing saved on failure", func(t *testing.T) {
			w := a.World()
			for name, tc := range map[string]struct {
				extra map[string]any
				field string
			}{
				"no name":        {map[string]any{"display_name": nil}, "display_name"},
				"long name":      {map[string]any{"display_name": strings.Repeat("n", 256)}, "display_name"},
				"no url":         {map[string]any{"url": nil}, "url"},
				"long url":       {map[string]any{"url": "https://x.example.com/" + strings.Repeat("a", 2048)}, "url"},
				"ftp":            {map[string]any{"url": "ftp://x.example.com/"}, "url"},
				"plain http":     {map[string]any{"url": "http://mcp.example.com/mcp"}, "url"},
				"transport":      {map[string]any{"transport": "sse"}, "transport"},
				"dup headers":    {map[string]any{"headers": []map[string]any{{"key": "X-A", "value": "1"}, {"key": "x-a", "value": "2"}}}, "headers"},
				"empty value":    {map[string]any{"headers": []map[string]any{{"key": "X-A", "value": ""}}}, "headers"},
				"bad header":     {map[string]any{"headers": []map[string]any{{"key": "X A", "value": "1"}}}, "headers"},
				"no server":      {map[string]any{"url": "http://127.0.0.1:1/mcp"}, "url"},
				"not mcp":        {map[string]any{"url": strings.TrimSuffix(ts.URL, "/mcp") + "/nothing-here"}, "url"},
				"private (SSRF)": {map[string]any{"url": "https://10.0.0.1/mcp"}, "url"},
			} {
				b := body(tc.extra)
				for k, v := range tc.extra {
					if v == nil {
						delete(b, k)
					}
				}
				if name == "not mcp" {
					ts.down.Store(true)
				}
				r := a.Do("POST", "/v1/mcp-servers", w.AdminK, b)
				ts.down.Store(false)
				require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
				require.Contains(t, r.Obj(t), tc.field, name)
			}
			require.Empty(t, a.Do("GET", "/v1/mcp-servers", w.AdminK, nil).List(t), "nothing saved")
		})

		t.Run("loopback refused without the switch", func(t *testing.T) {
			b := controltest.New(t, db)
			w := b.World()
			r := b.Do("POST", "/v1/mcp-servers", w.AdminK, body(nil))
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Equal(t, []any{"The URL must resolve to a public address."}, r.Obj(t)["url"])
			require.Empty(t, b.Do("GET", "/v1/mcp-servers", w.AdminK, nil).List(t))
		})

		t.Run("agent mcp_server_ids", func(t *testing.T) {
			w, other := a.World(), a.World()
			r := a.Do("POST", "/v1/agents", w.OwnerK, map[string]any{"name": "A", "mcp_server_ids": []string{"nope"}})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "mcp_server_ids")
			mine := a.Do("POST", "/v1/mcp-servers", w.AdminK, body(nil)).Obj(t)["id"].(string)
			theirs := a.Do("POST", "/v1/mcp-servers", other.AdminK, body(nil)).Obj(t)["id"].(string)

			// Saved ids must be the org's servers.
			for _, id := range []string{storage.NewUUID(), theirs} {
				r = a.Do("POST", "/v1/agents", w.OwnerK, map[string]any{"name": "A", "mcp_server_ids": []string{mine, id}})
				require.Equal(t, 400, r.Status, string(r.Body))
				require.Equal(t, []any{`MCP server "` + id + `" was not found; see GET /v1/mcp-servers.`}, r.Obj(t)["mcp_server_ids"])
			}
			ag := a.Agent(w.OwnerK, "B", map[string]any{"mcp_server_ids": []string{strings.ToUpper(mine), mine}})
			require.Equal(t, []any{mine}, ag["mcp_server_ids"], "lowercased, duplicates dropped")
			require.Equal(t, []any{}, a.Agent(w.OwnerK, "C", nil)["mcp_server_ids"])
			path := fmt.Sprintf("/v1/agents/%v", ag["id"])
			r = a.Do("PATCH", path, w.OwnerK, map[string]any{"draft_mcp_server_ids": []string{theirs}})
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "draft_mcp_server_ids")
			require.NotContains(t, r.Obj(t), "mcp_server_ids")

			// A server deleted since does not block other changes; a
			// draft naming it cannot be deployed.
			require.Equal(t, 204, a.Do("DELETE", "/v1/mcp-servers/"+mine, w.AdminK, nil).Status)
			r = a.Do("PATCH", path, w.OwnerK, map[string]any{"prompt": "Still fine.", "draft_mcp_server_ids": []string{}})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, []any{mine}, r.Obj(t)["mcp_server_ids"])
			r = a.Do("POST", path+"/deploy", w.OwnerK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, []any{}, r.Obj(t)["mcp_server_ids"])
			r = a.Do("PATCH", path, w.OwnerK, map[string]any{"draft_mcp_server_ids": []string{mine}})
			require.Equal(t, 400, r.Status, "deleted: unknown again")
		})

		t.Run("patch, sync, delete", func(t *testing.T) {
			w := a.World()
			r := a.Do("POST", "/v1/mcp-servers", w.OwnerK, body(nil))
			require.Equal(t, 201, r.Status, string(r.Body))
			m := r.Obj(t)
			id := m["id"].(string)
			synced := m["last_tools_sync_at"]

			require.Equal(t, 403, a.Do("PATCH", "/v1/mcp-servers/"+id, w.MembK, map[string]any{"enabled": false}).Status)
			p := a.Do("PATCH", "/v1/mcp-servers/"+id, w.AdminK, map[string]any{"enabled": false}).Obj(t)
			require.Equal(t, false, p["enabled"])
			require.Equal(t, synced, p["last_tools_sync_at"], "enabled alone does not re-sync")

			// An empty value keeps the stored one; a new header is added.
			ts.auth.Store("")
			r = a.Do("PATCH", "/v1/mcp-servers/"+id, w.AdminK, map[string]any{"headers": []map[string]any{{"key": "authorization", "value": ""}, {"key": "X-Tenant", "value": "acme"}}})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "Bearer tool-secret", ts.lastAuth(), "re-synced with the kept value")
			require.Equal(t, []any{map[string]any{"key": "authorization"}, map[string]any{"key": "X-Tenant"}}, r.Obj(t)["headers"])

			// A failing re-sync changes nothing.
			ts.down.Store(true)
			r = a.Do("PATCH", "/v1/mcp-servers/"+id, w.AdminK, map[string]any{"display_name": "Renamed"})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "url")
			r = a.Do("POST", "/v1/mcp-servers/"+id+"/sync-tools", w.AdminK, nil)
			require.Equal(t, 400, r.Status)
			ts.down.Store(false)
			require.Equal(t, "CRM", a.Do("GET", "/v1/mcp-servers/"+id, w.AdminK, nil).Obj(t)["display_name"])

			require.Equal(t, 403, a.Do("POST", "/v1/mcp-servers/"+id+"/sync-tools", w.MembK, nil).Status)
			r = a.Do("POST", "/v1/mcp-servers/"+id+"/sync-tools", w.AdminK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Len(t, r.Obj(t)["cached_tools"], 3)

			require.Equal(t, 404, a.Do("GET", "/v1/mcp-servers/not-a-uuid", w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("GET", "/v1/mcp-servers/"+storage.NewUUID(), w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("GET", "/v1/mcp-servers/"+id, a.World().OwnerK, nil).Status, "another org")
			require.Equal(t, 403, a.Do("DELETE", "/v1/mcp-servers/"+id, w.MembK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", "/v1/mcp-servers/"+id, w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", "/v1/mcp-servers/"+id, w.AdminK, nil).Status)
		})
	})
}
