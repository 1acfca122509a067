package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3/middleware/adaptor"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// bearer adds an Authorization header to every request of an MCP client.
type bearer struct {
	auth string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	cred, _, _ := strings.Cut(b.auth, "|")
	r.Header.Set("Authorization", cred)
	return b.next.RoundTrip(r)
}

// connect opens a go-sdk client session on /v1/mcp as auth.
func connect(t *testing.T, url, auth string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "voiced-test", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: url + "/v1/mcp", HTTPClient: &http.Client{Transport: bearer{auth, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// call runs a tool and returns its structured content and isError.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &out))
	}
	return out, text, res.IsError
}

func TestMCPServer(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		srv := httptest.NewServer(adaptor.FiberApp(a.Srv.App()))
		t.Cleanup(srv.Close)
		w := a.World()

		t.Run("credentials", func(t *testing.T) {
			_, err := connect(t, srv.URL, w.OwnerT+w.OrgHdr())
			require.Error(t, err, "personal token")
			for _, auth := range []string{"", w.OwnerT, "Bearer sk_live_nope"} {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				if auth == w.OwnerT {
					req.Header.Set("X-Service-Org", fmt.Sprint(w.Org.ID))
				}
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				res.Body.Close()
				require.Equal(t, 401, res.StatusCode, "auth %q", auth)
			}
		})

		for _, version := range []string{"", "2025-06-18", "2026-07-28"} {
			t.Run("unknown method "+version, func(t *testing.T) {
				params := `{}`
				if version == "2026-07-28" {
					params = `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`
				}
				req, _ := http.NewRequest("POST", srv.URL+"/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"bogus/thing","params":`+params+`}`))
				if version != "" {
					req.Header.Set("MCP-Protocol-Version", version)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", w.MembK)
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				require.Equal(t, 400, res.StatusCode, string(b))
				require.Equal(t, "application/json", res.Header.Get("Content-Type"))
				var m struct {
					JSONRPC string `json:"jsonrpc"`
					ID      int    `json:"id"`
					Error   struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(b, &m), string(b))
				require.Equal(t, "2.0", m.JSONRPC)
				require.Equal(t, 7, m.ID)
				require.Equal(t, -32601, m.Error.Code)
			})
		}

		cs, err := connect(t, srv.URL, w.MembK)
		require.NoError(t, err)
		require.Equal(t, "voiced", cs.InitializeResult().ServerInfo.Name)

		t.Run("tools/list", func(t *testing.T) {
			res, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			require.ElementsMatch(t, []string{"list_agents", "get_agent", "place_call", "get_call", "list_calls", "get_call_transcript"}, names)
		})

		ag := a.Agent(w.OwnerK, "Front desk", nil)
		agentID := controltest.ID(ag)

		t.Run("agents", func(t *testing.T) {
			out, _, isErr := call(t, cs, "list_agents", nil)
			require.False(t, isErr)
			list := out["agents"].([]any)
			require.Len(t, list, 1)
			require.Equal(t, "Front desk", list[0].(map[string]any)["name"])

			out, _, isErr = call(t, cs, "get_agent", map[string]any{"agent_id": agentID})
			require.False(t, isErr)
			require.Equal(t, ag["name"], out["name"])
			require.Equal(t, ag["prompt"], out["prompt"])

			_, text, isErr := call(t, cs, "get_agent", map[string]any{"agent_id": agentID + 1000})
			require.True(t, isErr)
			require.Equal(t, "Not found.", text)

			_, _, isErr = call(t, cs, "get_agent", map[string]any{})
			require.True(t, isErr, "agent_id is required")
		})

		t.Run("place, get, list, transcript", func(t *testing.T) {
			_, text, isErr := call(t, cs, "place_call", map[string]any{"agent_id": agentID, "from_number": "+14155550199", "to_number": "+14155550123"})
			require.True(t, isErr)
			require.Contains(t, text, "from_number")

			_, num := a.Trunk(w, "+14155550199")
			require.Equal(t, "+14155550199", num["number"])
			_, text, isErr = call(t, cs, "place_call", map[string]any{"agent_id": agentID, "from_number": "+14155550199", "to_number": "+14155550123"})
			require.True(t, isErr, "zero balance")
			require.Contains(t, text, "Insufficient balance")

			a.Credit(w.Org.ID, 1000)
			placed, text, isErr := call(t, cs, "place_call", map[string]any{"agent_id": agentID, "from_number": "+14155550199", "to_number": "+14155550123"})
			require.False(t, isErr, text)
			require.Equal(t, "outbound", placed["direction"])
			callID := int64(placed["call_id"].(float64))
			require.Len(t, a.Dialer.Calls, 1)
			require.Equal(t, callID, a.Dialer.Calls[0].CallID)

			got, _, isErr := call(t, cs, "get_call", map[string]any{"call_id": callID})
			require.False(t, isErr)
			require.Equal(t, placed["call_id"], got["call_id"])
			require.Equal(t, "in_progress", got["status"])

			_, text, isErr = call(t, cs, "get_call", map[string]any{"call_id": callID + 1000})
			require.True(t, isErr)
			require.Equal(t, "Not found.", text)

			list, _, isErr := call(t, cs, "list_calls", map[string]any{"limit": 5, "status": "in_progress"})
			require.False(t, isErr)
			require.EqualValues(t, 1, list["total"])
			require.EqualValues(t, 5, list["limit"])
			list, _, isErr = call(t, cs, "list_calls", map[string]any{"status": "completed"})
			require.False(t, isErr)
			require.EqualValues(t, 0, list["total"])
			require.EqualValues(t, 20, list["limit"], "default limit")
			for _, bad := range []map[string]any{{"limit": 0}, {"limit": 101}, {"status": "ringing"}} {
				_, _, isErr = call(t, cs, "list_calls", bad)
				require.True(t, isErr, "%v", bad)
			}

			tr, _, isErr := call(t, cs, "get_call_transcript", map[string]any{"call_id": callID})
			require.False(t, isErr)
			require.Equal(t, []any{}, tr["turns"])
		})

		t.Run("other org sees nothing", func(t *testing.T) {
			other := a.World()
			cs2, err := connect(t, srv.URL, other.OwnerK)
			require.NoError(t, err)
			_, _, isErr := call(t, cs2, "get_agent", map[string]any{"agent_id": agentID})
			require.True(t, isErr)
			out, _, _ := call(t, cs2, "list_agents", nil)
			require.Empty(t, out["agents"])
		})
	})
}
