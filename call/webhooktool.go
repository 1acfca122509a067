package call

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/webhook"
)

// WebhookTools is the tool source of an agent's own function tools: each
// runs as the blocking tool exchange with the organization's webhook
// (telephony.tool on phone calls, web.tool otherwise; spec 6.2).
type WebhookTools struct {
	// X is the exchange; nil offers no tools.
	X ToolExchanger
}

// Tools implements Source: the agent's tools.
func (w WebhookTools) Tools(c *Info) []llm.Tool {
	if w.X == nil {
		return nil
	}
	out := make([]llm.Tool, 0, len(c.Agent.Tools))
	for _, t := range c.Agent.Tools {
		out = append(out, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return out
}

// Run implements Source: the exchange's output, or its error as the
// tool's failure.
func (w WebhookTools) Run(ctx context.Context, c *Info, tc llm.ToolCall) (string, error) {
	var agentID *int64
	if c.AgentID != 0 {
		id := c.AgentID
		agentID = &id
	}
	args := json.RawMessage(tc.Arguments)
	if !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	res, err := w.X.Tool(ctx, c.OrgID, webhook.ToolRequest{Channel: c.Channel.hook, CallID: c.CallID, AgentID: agentID,
		ToolCallID: tc.ID, Name: tc.Name, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.Error != "" {
		return "", errors.New(res.Error)
	}
	return string(res.Output), nil
}
