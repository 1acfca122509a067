package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/sqltest"
)

// mcpNPMDir pins the published MCP peers: the Inspector CLI and
// server-everything.
const mcpNPMDir = "../../control/mcp/testdata/npm"

// mcpNPMReady installs the pinned MCP peers (npm ci) unless they already
// are.
func mcpNPMReady(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			sqltest.Unavailable(t, tool, err)
		}
	}
	lock, err := os.ReadFile(filepath.Join(mcpNPMDir, "package-lock.json"))
	require.NoError(t, err)
	stamp := filepath.Join(mcpNPMDir, "node_modules", ".voiced-lock")
	if old, err := os.ReadFile(stamp); err == nil && string(old) == string(lock) {
		return
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = mcpNPMDir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm ci: %s", out)
	require.NoError(t, os.WriteFile(stamp, lock, 0o644))
}

// inspector runs the MCP Inspector CLI and decodes the JSON it prints.
// The CLI exits 5 when a tool returned isError; wantExit says which
// status the run must end with.
func inspector(t *testing.T, out any, wantExit int, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join("node_modules", ".bin", "mcp-inspector"), append([]string{"--cli"}, args...)...)
	cmd.Dir = mcpNPMDir
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "mcp.json"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if wantExit == 0 {
		require.NoError(t, err, "inspector %v: %s\n%s", args, b, stderr.String())
	} else {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "inspector %v: %s\n%s", args, b, stderr.String())
		require.Equal(t, wantExit, ee.ExitCode(), "stderr: %s", stderr.String())
	}
	require.NoError(t, json.Unmarshal(b, out), "output: %s\n%s", b, stderr.String())
}

// TestMCPInspector drives /v1/mcp with the official MCP Inspector CLI.
func TestMCPInspector(t *testing.T) {
	mcpNPMReady(t)
	addr, key := startServe(t)
	base := "http://" + addr

	body, _ := json.Marshal(map[string]any{"name": "Inspector agent"})
	req, _ := http.NewRequest("POST", base+"/v1/agents", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode)

	auth := "Authorization: Bearer " + key
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	inspector(t, &list, 0, base+"/v1/mcp", "--transport", "http", "--header", auth, "--method", "tools/list")
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		require.Equal(t, "object", tl.InputSchema["type"], tl.Name)
	}
	require.ElementsMatch(t, []string{"list_agents", "get_agent", "place_call", "get_call", "list_calls", "get_call_transcript"}, names)

	type result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	var agents result
	inspector(t, &agents, 0, base+"/v1/mcp", "--transport", "http", "--header", auth, "--method", "tools/call", "--tool-name", "list_agents")
	require.False(t, agents.IsError)
	require.Len(t, agents.StructuredContent["agents"], 1)

	var missing result
	// A tool error is in-band: a result with isError, which the CLI
	// reports with exit status 5.
	inspector(t, &missing, 5, base+"/v1/mcp", "--transport", "http", "--header", auth, "--method", "tools/call", "--tool-name", "get_call", "--tool-arg", "call_id=999999")
	require.True(t, missing.IsError)
	require.Equal(t, "Not found.", missing.Content[0].Text)

	var calls result
	inspector(t, &calls, 0, base+"/v1/mcp", "--transport", "http", "--header", auth, "--method", "tools/call", "--tool-name", "list_calls", "--tool-arg", "limit=5")
	require.False(t, calls.IsError, "%+v", calls)
	require.EqualValues(t, 5, calls.StructuredContent["limit"])
}
