package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

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
	addTool(srv, s, &sdk.Tool{Name: "list_agents", Description: "List the organization's agents, newest first."},
		func(ctx context.Context, p *storage.Principal, _ struct{}) (any, error) {
			v, err := s.agents.AgentViews(ctx, p)
			if err != nil {
				return nil, err
			}
			return map[string]any{"agents": v}, nil
		})
	addTool(srv, s, &sdk.Tool{Name: "get_agent", Description: "Get one agent and its configuration."},
		func(ctx context.Context, p *storage.Principal, in agentArgs) (any, error) {
			return s.agents.AgentView(ctx, p, in.AgentID)
		})
	addTool(srv, s, &sdk.Tool{Name: "place_call", Description: "Place an outbound phone call from one of the organization's numbers with an agent. Billed like any call."},
		func(ctx context.Context, p *storage.Principal, in placeCallArgs) (any, error) {
			return s.placer.PlaceCall(ctx, p, in.AgentID, in.FromNumber, in.ToNumber)
		})
	addTool(srv, s, &sdk.Tool{Name: "get_call", Description: "Get one call: status, numbers, times, outcome, billing."},
		func(ctx context.Context, p *storage.Principal, in callArgs) (any, error) {
			return s.calls.CallView(ctx, p, in.CallID)
		})
	addTool(srv, s, &sdk.Tool{Name: "list_calls", Description: "List calls, newest first, optionally by status."},
		func(ctx context.Context, p *storage.Principal, in listCallsArgs) (any, error) {
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
		})
	addTool(srv, s, &sdk.Tool{Name: "get_call_transcript", Description: "Get a call's transcript: the turns of the agent and the other party, with offsets in ms."},
		func(ctx context.Context, p *storage.Principal, in callArgs) (any, error) {
			return s.calls.TranscriptView(ctx, p, in.CallID)
		})
}

// addTool registers a domain call as tool t: the caller's principal in,
// its view out as structured content (and its JSON text), errors
// in-band with isError. The input schema is In's, as the SDK's generic
// AddTool derives it, and arguments are checked against it the same way;
// but they are decoded with encoding/json, once, because the SDK's own
// decoder allocates a 32 KiB buffer per decode and its generic handler
// decodes the arguments twice and the output once more (issue 28's
// get_call throughput, docs/decisions.md).
func addTool[In any](srv *sdk.Server, s *Server, t *sdk.Tool, fn func(ctx context.Context, p *storage.Principal, in In) (any, error)) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: %v", t.Name, err))
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: %v", t.Name, err))
	}
	t.InputSchema = schema
	failed := func(err error) (*sdk.CallToolResult, error) {
		res := &sdk.CallToolResult{}
		res.SetError(err)
		return res, nil
	}
	srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil {
			return failed(fmt.Errorf("validating \"arguments\": unmarshaling arguments: %v", err))
		}
		if err := resolved.Validate(m); err != nil {
			return failed(fmt.Errorf("validating \"arguments\": %v", err))
		}
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return failed(err)
		}
		p, err := principal(req)
		if err != nil {
			return failed(s.toolErr(t.Name, err))
		}
		out, err := fn(ctx, p, in)
		if err != nil {
			return failed(s.toolErr(t.Name, err))
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		return &sdk.CallToolResult{StructuredContent: json.RawMessage(b), Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
	})
}

func argErr(field, msg string) error { return api.FieldErr(field, msg) }
