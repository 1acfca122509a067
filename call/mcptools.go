package call

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/mcp"
)

// MCPCatalog resolves a call's MCP tools at its start
// (control/mcp.CallCatalog).
type MCPCatalog interface {
	ForCall(ctx context.Context, orgID int64, serverIDs []string, searchOver int) (*mcp.CallTools, error)
}

// MCPTools is the tool source of an agent's MCP servers (mcp_server_ids):
// their cached tools, resolved once at the call's start; each run is one
// MCP tools/call through the call's session to that server, opened at
// the first run and closed when the call ends (EndCall). Over the
// agent's mcp_tool_search_threshold tools, the model is offered
// tool_search instead, and the tools it finds grow the call's (Grower).
type MCPTools struct {
	// Catalog resolves the tools; nil offers none.
	Catalog func() MCPCatalog
	Log     *slog.Logger

	calls sync.Map // call id -> *mcp.CallTools
}

// resolveTimeout bounds reading a call's MCP servers at its start.
const resolveTimeout = 3 * time.Second

// Tools implements Source.
func (m *MCPTools) Tools(c *Info) []llm.Tool {
	if len(c.Agent.MCPServerIDs) == 0 || m.Catalog == nil {
		return nil
	}
	cat := m.Catalog()
	if cat == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	ct, err := cat.ForCall(ctx, c.OrgID, c.Agent.MCPServerIDs, c.Agent.MCPToolSearchThreshold)
	if err != nil {
		// The call goes on without them.
		m.Log.Warn("mcp tools not resolved", "call_id", c.CallID, "err", err)
		return nil
	}
	if old, loaded := m.calls.Swap(c.CallID, ct); loaded {
		old.(*mcp.CallTools).Close()
	}
	return llmTools(ct.Specs)
}

// Grown implements Grower: the tools tool_search has loaded in call c.
func (m *MCPTools) Grown(c *Info) []llm.Tool {
	v, ok := m.calls.Load(c.CallID)
	if !ok {
		return nil
	}
	return llmTools(v.(*mcp.CallTools).Loaded())
}

func llmTools(ts []mcp.CachedTool) []llm.Tool {
	out := make([]llm.Tool, len(ts))
	for i, t := range ts {
		out[i] = llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

// Run implements Source.
func (m *MCPTools) Run(ctx context.Context, c *Info, tc llm.ToolCall) (string, error) {
	v, ok := m.calls.Load(c.CallID)
	if !ok {
		return "", mcp.ErrUnavailable
	}
	return v.(*mcp.CallTools).Run(ctx, tc.Name, tc.Arguments)
}

// EndCall implements Ender: the call's sessions close.
func (m *MCPTools) EndCall(callID int64) {
	if v, ok := m.calls.LoadAndDelete(callID); ok {
		v.(*mcp.CallTools).Close()
	}
}
