package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

type agentArgs struct {
	AgentID int64 `json:"agent_id" jsonschema:"the agent's id"`
}

type callArgs struct {
	CallID int64 `json:"call_id" jsonschema:"the call's id"`
}

type placeCallArgs struct {
	AgentID    int64  `json:"agent_id" jsonschema:"the agent that talks on the call"`
	FromNumber string `json:"from_number" jsonschema:"an active VoIP number of the organization, E.164 like +14155550100"`
	ToNumber   string `json:"to_number" jsonschema:"the number to call, E.164 like +14155550100"`
}

type listCallsArgs struct {
	Limit  *int   `json:"limit,omitempty" jsonschema:"how many calls, newest first: 1-100, default 20"`
	Status string `json:"status,omitempty" jsonschema:"only calls in this status: in_progress, completed or failed"`
}

// defaultListLimit is list_calls' limit when none is given: a page a
// model reads comfortably.
const defaultListLimit = 20

// addTools registers the six tools of spec 4.12 on srv.
func (s *Server) addTools(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{Name: "list_agents", Description: "List the organization's agents, newest first."},
		tool(s, "list_agents", func(ctx context.Context, p *storage.Principal, _ struct{}) (any, error) {
			v, err := s.agents.AgentViews(ctx, p)
			if err != nil {
				return nil, err
			}
			return map[string]any{"agents": v}, nil
		}))
	sdk.AddTool(srv, &sdk.Tool{Name: "get_agent", Description: "Get one agent and its configuration."},
		tool(s, "get_agent", func(ctx context.Context, p *storage.Principal, in agentArgs) (any, error) {
			return s.agents.AgentView(ctx, p, in.AgentID)
		}))
	sdk.AddTool(srv, &sdk.Tool{Name: "place_call", Description: "Place an outbound phone call from one of the organization's numbers with an agent. Billed like any call."},
		tool(s, "place_call", func(ctx context.Context, p *storage.Principal, in placeCallArgs) (any, error) {
			return s.placer.PlaceCall(ctx, p, in.AgentID, in.FromNumber, in.ToNumber)
		}))
	sdk.AddTool(srv, &sdk.Tool{Name: "get_call", Description: "Get one call: status, numbers, times, outcome, billing."},
		tool(s, "get_call", func(ctx context.Context, p *storage.Principal, in callArgs) (any, error) {
			return s.calls.CallView(ctx, p, in.CallID)
		}))
	sdk.AddTool(srv, &sdk.Tool{Name: "list_calls", Description: "List calls, newest first, optionally by status."},
		tool(s, "list_calls", func(ctx context.Context, p *storage.Principal, in listCallsArgs) (any, error) {
			limit := defaultListLimit
			if in.Limit != nil {
				limit = *in.Limit
			}
			if limit < 1 || limit > 100 {
				return nil, argErr("limit", "Must be an integer from 1 to 100.")
			}
			switch in.Status {
			case "", storage.CallInProgress, storage.CallCompleted, storage.CallFailed:
			default:
				return nil, argErr("status", "Must be one of in_progress, completed, failed.")
			}
			return s.calls.CallViews(ctx, p, limit, in.Status)
		}))
	sdk.AddTool(srv, &sdk.Tool{Name: "get_call_transcript", Description: "Get a call's transcript: the turns of the agent and the other party, with offsets in ms."},
		tool(s, "get_call_transcript", func(ctx context.Context, p *storage.Principal, in callArgs) (any, error) {
			return s.calls.TranscriptView(ctx, p, in.CallID)
		}))
}

// tool adapts a domain call to an SDK tool handler: the caller's
// principal in, its view out as structured content (and its JSON text),
// errors in-band with isError.
func tool[In any](s *Server, name string, fn func(ctx context.Context, p *storage.Principal, in In) (any, error)) sdk.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		p, err := principal(req)
		if err != nil {
			return nil, nil, s.toolErr(name, err)
		}
		out, err := fn(ctx, p, in)
		if err != nil {
			return nil, nil, s.toolErr(name, err)
		}
		return nil, out, nil
	}
}

func argErr(field, msg string) error { return api.FieldErr(field, msg) }
