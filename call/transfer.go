package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
)

// TransferToolName is the built-in tool that hands the caller over to
// one of the agent's transfer destinations (a cold transfer by REFER, or
// a bridge when the caller's side refuses it).
const TransferToolName = "transfer_call"

// Transfers is the transfer_call tool source: offered on calls with a
// SIP leg whose agent has transfer destinations.
type Transfers struct {
	// Recorder returns where the transfer is recorded (nil: nowhere).
	Recorder func() Recorder
	Log      *slog.Logger
}

// Tools implements Source.
func (s Transfers) Tools(c *Info) []llm.Tool {
	if c.Leg == nil || !c.Channel.transfer {
		return nil
	}
	if t, ok := transferTool(c.Agent.TransferDestinations); ok {
		return []llm.Tool{t}
	}
	return nil
}

// Run implements Source: the transfer, recorded as a transfer event.
func (s Transfers) Run(ctx context.Context, c *Info, tc llm.ToolCall) (string, error) {
	d, err := destination(c.Agent.TransferDestinations, tc.Arguments)
	if err != nil {
		return "", err
	}
	if err := c.Leg.Transfer(ctx, d.Number); err != nil {
		return "", fmt.Errorf("the transfer did not go through: %w", err)
	}
	if s.Recorder != nil {
		if r := s.Recorder(); r != nil {
			ev := calllog.CallEvent{ID: "transfer-" + tc.ID, Kind: calllog.EventTransfer, At: time.Now(), Destination: d.Number}
			if err := r.Append(context.WithoutCancel(ctx), c.CallID, []calllog.CallEvent{ev}); err != nil && s.Log != nil {
				s.Log.Warn("transfer not recorded", "call_id", c.CallID, "err", err)
			}
		}
	}
	if c.Leg.Bridged() {
		return `{"status":"bridged"}`, nil
	}
	return `{"status":"transferred"}`, nil
}

// transferTool describes transfer_call for the agent's destinations.
func transferTool(dests []control.TransferDestination) (llm.Tool, bool) {
	if len(dests) == 0 {
		return llm.Tool{}, false
	}
	names := make([]string, 0, len(dests))
	desc := "Transfer the caller to a person or team; tell the caller first. Destinations:"
	for _, d := range dests {
		names = append(names, d.Name)
		desc += " " + d.Name
		if d.Description != "" {
			desc += " (" + d.Description + ")"
		}
		desc += ";"
	}
	params, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"destination"},
		"properties": map[string]any{"destination": map[string]any{"type": "string", "enum": names}}})
	return llm.Tool{Name: TransferToolName, Description: desc, Parameters: params}, true
}

// destination finds the transfer destination transfer_call's arguments
// name.
func destination(dests []control.TransferDestination, args string) (control.TransferDestination, error) {
	var in struct {
		Destination string `json:"destination"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil || in.Destination == "" {
		return control.TransferDestination{}, errors.New("transfer_call needs a destination")
	}
	for _, d := range dests {
		if strings.EqualFold(d.Name, in.Destination) || d.Number == in.Destination {
			return d, nil
		}
	}
	return control.TransferDestination{}, fmt.Errorf("no transfer destination %q", in.Destination)
}
