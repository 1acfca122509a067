package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voiced/voiced/storage"
)

// Catalog is what a call needs from storage: the org's MCP servers.
type Catalog interface {
	MCPServers(ctx context.Context, orgID int64) ([]storage.MCPServer, error)
}

// CallCatalog resolves the MCP tools of calls. Safe for concurrent use.
type CallCatalog struct {
	servers Catalog
	conn    *Connector
	log     *slog.Logger
}

// NewCallCatalog returns a CallCatalog over the stored servers.
func NewCallCatalog(servers Catalog, conn *Connector, log *slog.Logger) *CallCatalog {
	return &CallCatalog{servers: servers, conn: conn, log: log}
}

// connectTimeout bounds opening a session to a server mid-call, and
// downFor is how long a server that failed is not tried again within a
// call: its tools fail at once meanwhile.
const (
	connectTimeout = 5 * time.Second
	downFor        = 5 * time.Second
)

// ForCall resolves, at a call's start, the tools of the enabled servers
// among serverIDs in orgID: their cached tools, read from the database
// once (no server is asked for its tools). Unknown or disabled ids are
// skipped. Nothing connects until a tool runs. Over searchOver tools,
// Specs is the one tool_search tool, which loads definitions on demand
// (Loaded).
func (c *CallCatalog) ForCall(ctx context.Context, orgID int64, serverIDs []string, searchOver int) (*CallTools, error) {
	ct := &CallTools{conn: c.conn, log: c.log, by: map[string]*callTool{}, servers: map[string]*callServer{}}
	if len(serverIDs) == 0 {
		return ct, nil
	}
	all, err := c.servers.MCPServers(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("mcp servers of org %d: %w", orgID, err)
	}
	for _, m := range all {
		if !m.Enabled || !slices.Contains(serverIDs, strings.ToLower(m.ID)) {
			continue
		}
		var tools []CachedTool
		if err := json.Unmarshal(m.CachedTools, &tools); err != nil {
			return nil, fmt.Errorf("cached tools of mcp server %s: %w", m.ID, err)
		}
		srv := &callServer{m: m}
		ct.servers[m.ID] = srv
		for _, t := range tools {
			ct.Specs = append(ct.Specs, t)
			ct.by[t.Name] = &callTool{server: srv, name: t.MCP.ToolName}
		}
	}
	if len(ct.Specs) > searchOver {
		ct.search = newToolIndex(ct.Specs, ct.servers)
		ct.Specs = []CachedTool{ct.search.spec()}
	}
	return ct, nil
}

// CallTools is one call's MCP tools: what the model is offered, and one
// session per server, opened at its first tool call and kept for the
// call's life. Close ends the sessions (at hang-up). Safe for concurrent
// use.
type CallTools struct {
	// Specs are the tools offered to the model, as cached.
	Specs []CachedTool

	conn    *Connector
	log     *slog.Logger
	by      map[string]*callTool
	servers map[string]*callServer
	// search is set when the model is offered tool_search instead of
	// the tools; then only the tools it loaded run.
	search *toolIndex

	mu     sync.Mutex
	closed bool
	loaded []CachedTool
}

type callTool struct {
	server *callServer
	name   string
}

type callServer struct {
	m storage.MCPServer

	mu        sync.Mutex
	session   *sdk.ClientSession
	downUntil time.Time
}

// ErrUnavailable means the tool's MCP server could not be reached; the
// model hears it as the tool's failure.
var ErrUnavailable = errors.New("mcp server unavailable")

// Run calls tool name (a cached tool's model-facing name) with the JSON
// arguments args: one tools/call on the server's session, opened now if
// it is not yet. An isError result is returned as an error with the
// tool's text; so is a transport failure, after which the session is
// dropped and the server is not tried again for downFor.
func (ct *CallTools) Run(ctx context.Context, name, args string) (string, error) {
	if ct.search != nil && name == SearchTool {
		return ct.toolSearch(args)
	}
	t, ok := ct.by[name]
	if !ok {
		return "", fmt.Errorf("no mcp tool named %q", name)
	}
	if ct.search != nil && !ct.isLoaded(name) {
		return "", fmt.Errorf("%s is not loaded: call %s first", name, SearchTool)
	}
	var arguments map[string]any
	if strings.TrimSpace(args) != "" {
		if err := json.Unmarshal([]byte(args), &arguments); err != nil {
			return "", errors.New("the arguments are not a JSON object")
		}
	}
	cs, err := ct.session(ctx, t.server)
	if err != nil {
		return "", err
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.name, Arguments: arguments})
	if err != nil {
		if ctx.Err() == nil {
			ct.fail(t.server, cs)
		}
		return "", fmt.Errorf("%w: %s: %v", ErrUnavailable, t.server.m.DisplayName, err)
	}
	out := resultText(res)
	if res.IsError {
		if out == "" {
			out = "the tool failed"
		}
		return "", errors.New(out)
	}
	return out, nil
}

// session returns s's open session, opening it if needed.
func (ct *CallTools) session(ctx context.Context, s *callServer) (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	if time.Now().Before(s.downUntil) {
		return nil, fmt.Errorf("%w: %s did not answer a moment ago", ErrUnavailable, s.m.DisplayName)
	}
	ct.mu.Lock()
	closed := ct.closed
	ct.mu.Unlock()
	if closed {
		return nil, errors.New("the call has ended")
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cs, err := ct.conn.Connect(cctx, s.m.URL, s.m.Headers)
	if err != nil {
		s.downUntil = time.Now().Add(downFor)
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, s.m.DisplayName, err)
	}
	s.session = cs
	return cs, nil
}

// fail drops s's session cs after a transport failure.
func (ct *CallTools) fail(s *callServer, cs *sdk.ClientSession) {
	s.mu.Lock()
	mine := s.session == cs
	if mine {
		s.session = nil
		s.downUntil = time.Now().Add(downFor)
	}
	s.mu.Unlock()
	if mine {
		cs.Close()
	}
}

// Close ends every open session; later runs fail.
func (ct *CallTools) Close() {
	ct.mu.Lock()
	ct.closed = true
	ct.mu.Unlock()
	for _, s := range ct.servers {
		s.mu.Lock()
		if s.session != nil {
			s.session.Close()
			s.session = nil
		}
		s.mu.Unlock()
	}
}

// resultText is a tool result as the model reads it: the text blocks,
// else the structured content's JSON, else each block's JSON.
func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(tc.Text)
		}
	}
	if b.Len() > 0 {
		return b.String()
	}
	if res.StructuredContent != nil {
		if j, err := json.Marshal(res.StructuredContent); err == nil {
			return string(j)
		}
	}
	for _, c := range res.Content {
		if j, err := json.Marshal(c); err == nil {
			b.Write(j)
		}
	}
	return b.String()
}
