// Package mcptools answers the MCP server's tools (control/mcp) with the
// views the REST routes return: agents, calls, transcripts, and placing
// an outbound call through the call log.
package mcptools

import (
	"context"

	"github.com/voiced/voiced/control/agents"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// AgentStore reads an organization's agents.
type AgentStore interface {
	Agents(ctx context.Context, orgID int64) ([]storage.Agent, error)
	Agent(ctx context.Context, orgID, id int64) (storage.Agent, error)
}

// CallStore reads an organization's calls and their events.
type CallStore interface {
	Call(ctx context.Context, orgID, id int64) (storage.Call, error)
	Calls(ctx context.Context, f storage.CallFilter) ([]storage.Call, int64, error)
	CallEvents(ctx context.Context, callIDs []int64, kinds ...string) ([]storage.CallEventRow, error)
}

// Placer places an outbound call (calllog.Log.Place).
type Placer interface {
	Place(ctx context.Context, orgID int64, in calllog.PlaceRequest) (storage.Call, error)
}

// Tools implements the MCP server's readers and placer (control/mcp's
// AgentReader, CallReader, CallPlacer) over the code the REST routes use,
// so a tool sees exactly what the REST call would return.
type Tools[C any] struct {
	agents AgentStore
	schema agents.Schema[C]
	calls  CallStore
	placer Placer
}

// New returns the tools over the stores; schema renders agents as the
// agent routes do.
func New[C any](as AgentStore, schema agents.Schema[C], cs CallStore, placer Placer) Tools[C] {
	return Tools[C]{agents: as, schema: schema, calls: cs, placer: placer}
}

func (m Tools[C]) AgentViews(ctx context.Context, p *storage.Principal) (any, error) {
	as, err := m.agents.Agents(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(as))
	for i, a := range as {
		if out[i], err = agents.View(m.schema, a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m Tools[C]) AgentView(ctx context.Context, p *storage.Principal, agentID int64) (any, error) {
	a, err := m.agents.Agent(ctx, p.OrgID, agentID)
	if err != nil {
		return nil, api.StoreErr(err)
	}
	return agents.View(m.schema, a)
}

func (m Tools[C]) CallView(ctx context.Context, p *storage.Principal, callID int64) (any, error) {
	c, err := m.calls.Call(ctx, p.OrgID, callID)
	if err != nil {
		return nil, api.StoreErr(err)
	}
	return calls.ViewOf(c), nil
}

func (m Tools[C]) CallViews(ctx context.Context, p *storage.Principal, limit int, status string) (any, error) {
	f := storage.CallFilter{OrgID: p.OrgID, Status: status, Limit: limit}
	cs, total, err := m.calls.Calls(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]calls.View, len(cs))
	for i, c := range cs {
		out[i] = calls.ViewOf(c)
	}
	return map[string]any{"results": out, "total": total, "limit": f.Limit, "offset": 0}, nil
}

func (m Tools[C]) TranscriptView(ctx context.Context, p *storage.Principal, callID int64) (any, error) {
	c, err := m.calls.Call(ctx, p.OrgID, callID)
	if err != nil {
		return nil, api.StoreErr(err)
	}
	events, err := m.calls.CallEvents(ctx, []int64{c.ID}, calls.EventTurn)
	if err != nil {
		return nil, err
	}
	return calls.TranscriptOf(c, events), nil
}

func (m Tools[C]) PlaceCall(ctx context.Context, p *storage.Principal, agentID int64, from, to string) (any, error) {
	c, err := m.placer.Place(ctx, p.OrgID, calllog.PlaceRequest{AgentID: &agentID, FromNumber: &from, ToNumber: &to})
	if err != nil {
		return nil, err
	}
	return calls.ViewOf(c), nil
}
