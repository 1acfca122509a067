package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
)

// everything runs the reference MCP server (@modelcontextprotocol/
// server-everything, pinned) over streamable HTTP on a free loopback
// port and returns its URL and a kill switch.
func everything(t *testing.T) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", filepath.Join("node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "streamableHttp")
	cmd.Dir = mcpNPMDir
	cmd.Env = append(cmd.Environ(), "PORT="+strconv.Itoa(port))
	var stderr syncBuf
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "listening on port") }, 20*time.Second, 50*time.Millisecond, "stderr: %s", stderr.String())
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), kill
}

// mcpModel is an OpenAI-compatible chat completions server scripted to
// call tool twice with args; before the second call it runs between (the
// test kills the MCP server there); then it answers in words. It keeps
// the tool results it was sent, in order.
type mcpModel struct {
	mu      sync.Mutex
	results []string
	asked   int
}

func (m *mcpModel) server(t *testing.T, tool func() string, args string, between func()) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		var results []string
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				s, _ := msg.Content.(string)
				results = append(results, s)
			}
		}
		m.mu.Lock()
		m.results = results
		m.asked++
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) { sseChunk(w, delta, finish) }
		call := func(id string) {
			chunk(fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}`, id, tool(), args), "")
			chunk(`{}`, "tool_calls")
		}
		switch len(results) {
		case 0:
			call("call_mcp1")
		case 1:
			between()
			call("call_mcp2")
		default:
			chunk(`{"role":"assistant","content":"Done."}`, "")
			chunk(`{}`, "stop")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (m *mcpModel) seen() (results []string, asked int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...), m.asked
}

// TestMCPToolMidCall: server-everything is registered as an MCP server
// of an agent; on a realtime call and on a SIP call (sipp) the scripted
// model calls its echo tool and the echo reaches the model's context;
// then the server is killed, the model calls the tool again and hears an
// in-band error, and the call goes on (the model is asked once more and
// answers).
func TestMCPToolMidCall(t *testing.T) {
	mcpNPMReady(t)
	for _, channel := range []string{"realtime", "sip"} {
		t.Run(channel, func(t *testing.T) {
			if channel == "sip" {
				siptest.Binary(t, "sipp", "sip-tester")
			}
			url, kill := everything(t)
			m := &mcpModel{}
			var toolName string
			model := m.server(t, func() string { return toolName }, `{"message":"hello from voiced"}`, kill)
			sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", model.URL+"/v1")
			defer sv.stop(t)

			st, srv := sv.call("POST", "/v1/mcp-servers", fmt.Sprintf(`{"display_name":"Everything","url":%q}`, url))
			require.Equal(t, 201, st, "%v", srv)
			id := srv["id"].(string)
			for _, tl := range srv["cached_tools"].([]any) {
				tm := tl.(map[string]any)
				if tm["mcp"].(map[string]any)["tool_name"] == "echo" {
					toolName = tm["name"].(string)
				}
			}
			require.Equal(t, "mcp_"+id+"_echo", toolName)

			st, ag := sv.call("POST", "/v1/agents", fmt.Sprintf(`{"name":"Echoer","voice":"espeak:en-us","prompt":"Echo things.","inbound_speak_order":"agent_first","mcp_server_ids":[%q]}`, id))
			require.Equal(t, 201, st, "%v", ag)
			require.Equal(t, []any{id}, ag["mcp_server_ids"])
			done := func() bool {
				results, asked := m.seen()
				return len(results) == 2 && asked >= 3
			}

			switch channel {
			case "realtime":
				realtimeAgentCall(t, sv.base, sv.key, objID(ag), func(int64) bool { return done() })
			case "sip":
				uerr := sippCallsAgent(t, sv, objID(ag))
				r, n := m.seen()
				require.True(t, done(), "the model was asked %d times and saw %q; sipp: %v", n, r, uerr)
				require.NoError(t, uerr, "the caller stayed on the line and hung up")
			}
			results, _ := m.seen()
			require.Equal(t, "Echo: hello from voiced", results[0], "the MCP tool's result reached the model")
			require.Contains(t, results[1], `"error"`, "the dead server is an in-band error")
			require.Contains(t, results[1], "mcp server unavailable")
		})
	}
}
