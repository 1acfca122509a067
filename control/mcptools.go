package control

import (
	"context"

	"github.com/voiced/voiced/control/agents"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// mcpTools implements the MCP server's readers (control/mcp) over the
// code the REST routes use, so a tool sees exactly what the REST call
// would return.
type mcpTools struct{ s *Server }

func (m mcpTools) AgentViews(ctx context.Context, p *storage.Principal) (any, error) {
	as, err := m.s.store.Agents.Agents(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(as))
	for i, a := range as {
		if out[i], err = agents.View[AgentConfig](agentSchema{r: m.s.res}, a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m mcpTools) AgentView(ctx context.Context, p *storage.Principal, agentID int64) (any, error) {
	a, err := m.s.store.Agents.Agent(ctx, p.OrgID, agentID)
	if err != nil {
		return nil, storeErr(err)
	}
	return agents.View[AgentConfig](agentSchema{r: m.s.res}, a)
}

func (m mcpTools) CallView(ctx context.Context, p *storage.Principal, callID int64) (any, error) {
	c, err := m.s.store.Calls.Call(ctx, p.OrgID, callID)
	if err != nil {
		return nil, storeErr(err)
	}
	return calls.ViewOf(c), nil
}

func (m mcpTools) CallViews(ctx context.Context, p *storage.Principal, limit int, status string) (any, error) {
	f := storage.CallFilter{OrgID: p.OrgID, Status: status, Limit: limit}
	cs, total, err := m.s.store.Calls.Calls(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]calls.View, len(cs))
	for i, c := range cs {
		out[i] = calls.ViewOf(c)
	}
	return map[string]any{"results": out, "total": total, "limit": f.Limit, "offset": 0}, nil
}

func (m mcpTools) TranscriptView(ctx context.Context, p *storage.Principal, callID int64) (any, error) {
	c, err := m.s.store.Calls.Call(ctx, p.OrgID, callID)
	if err != nil {
		return nil, storeErr(err)
	}
	events, err := m.s.store.Calls.CallEvents(ctx, []int64{c.ID}, EventTurn)
	if err != nil {
		return nil, err
	}
	return calls.TranscriptOf(c, events), nil
}

func (m mcpTools) PlaceCall(ctx context.Context, p *storage.Principal, agentID int64, from, to string) (any, error) {
	c, err := m.s.dialOutbound(ctx, p.OrgID, outboundInput{AgentID: &agentID, FromNumber: &from, ToNumber: &to})
	if err != nil {
		return nil, err
	}
	return calls.ViewOf(c), nil
}
