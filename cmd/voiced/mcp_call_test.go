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

// fakeChat is an OpenAI-compatible chat completions server (the model
// provider boundary) whose answers script decides from each request.
func fakeChat(t *testing.T, script func(req chatRequest, reply chatReply)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		script(req, chatReply{w})
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// chatRequest is what fakeChat reads of a request.
type chatRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// toolResults are the contents of the request's tool messages, in order.
func (r chatRequest) toolResults() (out []string) {
	for _, msg := range r.Messages {
		if msg.Role == "tool" {
			s, _ := msg.Content.(string)
			out = append(out, s)
		}
	}
	return out
}

// toolNames are the tools the request offers.
func (r chatRequest) toolNames() (out []string) {
	for _, tl := range r.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// chatReply streams one answer as chat completion chunks.
type chatReply struct{ w http.ResponseWriter }

func (c chatReply) chunk(delta, finish string) {
	fin := "null"
	if finish != "" {
		fin = `"` + finish + `"`
	}
	fmt.Fprintf(c.w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, fin)
}

// call asks for one tool call.
func (c chatReply) call(id, name, args string) {
	c.chunk(fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}`, id, name, args), "")
	c.chunk(`{}`, "tool_calls")
}

// say answers in words.
func (c chatReply) say(text string) {
	c.chunk(fmt.Sprintf(`{"role":"assistant","content":%q}`, text), "")
	c.chunk(`{}`, "stop")
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
	return fakeChat(t, func(req chatRequest, reply chatReply) {
		results := req.toolResults()
		m.mu.Lock()
		m.results = results
		m.asked++
		m.mu.Unlock()
		switch len(results) {
		case 0:
			reply.call("call_mcp1", tool(), args)
		case 1:
			between()
			reply.call("call_mcp2", tool(), args)
		default:
			reply.say("Done.")
		}
	})
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

// searchModel is an OpenAI-compatible chat completions server scripted
// for tool_search: it searches for "echo", calls the tool the search
// returned, then answers in words. It keeps the tool names each request
// offered and the tool results it was sent.
type searchModel struct {
	mu      sync.Mutex
	offered [][]string
	results []string
}

func (m *searchModel) server(t *testing.T) *httptest.Server {
	return fakeChat(t, func(req chatRequest, reply chatReply) {
		results := req.toolResults()
		m.mu.Lock()
		m.results = results
		m.offered = append(m.offered, req.toolNames())
		m.mu.Unlock()
		switch len(results) {
		case 0:
			reply.call("call_search", "tool_search", `{"query":"echo a message back"}`)
		case 1:
			// The search result names the tool to call.
			var found struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			_ = json.Unmarshal([]byte(results[0]), &found)
			name := "none"
			for _, tl := range found.Tools {
				if strings.HasSuffix(tl.Name, "_echo") {
					name = tl.Name
				}
			}
			reply.call("call_echo", name, `{"message":"found by search"}`)
		default:
			reply.say("Done.")
		}
	})
}

func (m *searchModel) seen() (offered [][]string, results []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]string(nil), m.offered...), append([]string(nil), m.results...)
}

// TestMCPToolSearchMidCall: an agent whose MCP server (server-everything)
// offers more tools than its mcp_tool_search_threshold is offered
// tool_search and none of them; on a realtime call the scripted model
// searches, gets the echo tool's definition, and from its next request
// is offered that tool, calls it, and the echo reaches its context.
func TestMCPToolSearchMidCall(t *testing.T) {
	mcpNPMReady(t)
	url, _ := everything(t)
	m := &searchModel{}
	model := m.server(t)
	sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", model.URL+"/v1")
	defer sv.stop(t)

	st, srv := sv.call("POST", "/v1/mcp-servers", fmt.Sprintf(`{"display_name":"Everything","url":%q}`, url))
	require.Equal(t, 201, st, "%v", srv)
	id := srv["id"].(string)
	require.Greater(t, len(srv["cached_tools"].([]any)), 3)
	echo := "mcp_" + id + "_echo"

	st, ag := sv.call("POST", "/v1/agents", fmt.Sprintf(`{"name":"Searcher","voice":"espeak:en-us","prompt":"Use tools.","inbound_speak_order":"agent_first","mcp_server_ids":[%q],"mcp_tool_search_threshold":3}`, id))
	require.Equal(t, 201, st, "%v", ag)
	require.EqualValues(t, 3, ag["mcp_tool_search_threshold"])
	st, bad := sv.call("PATCH", fmt.Sprintf("/v1/agents/%d", objID(ag)), `{"mcp_tool_search_threshold":0}`)
	require.Equal(t, 400, st, "%v", bad)
	require.Contains(t, bad, "mcp_tool_search_threshold")

	realtimeAgentCall(t, sv.base, sv.key, objID(ag), func(int64) bool {
		_, results := m.seen()
		return len(results) == 2
	})
	offered, results := m.seen()
	require.GreaterOrEqual(t, len(offered), 3, "searched, called, answered")
	mcpNames := func(names []string) (out []string) {
		for _, n := range names {
			if strings.HasPrefix(n, "mcp_") {
				out = append(out, n)
			}
		}
		return out
	}
	require.Contains(t, offered[0], "tool_search")
	require.Empty(t, mcpNames(offered[0]), "no MCP tool definitions before a search")
	require.Contains(t, results[0], `"name":"`+echo+`"`, "the search returned the echo tool's definition")
	require.Contains(t, results[0], `"parameters"`)
	require.Contains(t, offered[1], echo, "the found tool is offered from the next request")
	require.Contains(t, offered[1], "tool_search")
	require.Equal(t, "Echo: found by search", results[1], "the found tool ran and its result reached the model")
}
