package call

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/media/agent"
)

// TestTransferTool: the agent is offered transfer_call only with
// destinations, named in the schema's enum; its arguments resolve to a
// destination by name (any case) or number, anything else is an error
// the model gets back.
func TestTransferTool(t *testing.T) {
	_, ok := transferTool(nil)
	require.False(t, ok)
	dests := []control.TransferDestination{{Name: "Sales", Number: "+14155550111", Description: "new orders"}, {Name: "Support", Number: "+14155550122"}}
	tool, ok := transferTool(dests)
	require.True(t, ok)
	require.Equal(t, "transfer_call", tool.Name)
	require.Contains(t, tool.Description, "Sales (new orders);")
	var schema struct {
		Properties struct {
			Destination struct {
				Enum []string `json:"enum"`
			} `json:"destination"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal(tool.Parameters, &schema))
	require.Equal(t, []string{"Sales", "Support"}, schema.Properties.Destination.Enum)
	require.Equal(t, []string{"destination"}, schema.Required)

	d, err := destination(dests, `{"destination":"support"}`)
	require.NoError(t, err)
	require.Equal(t, "+14155550122", d.Number)
	d, err = destination(dests, `{"destination":"+14155550111"}`)
	require.NoError(t, err)
	require.Equal(t, "Sales", d.Name)
	for _, bad := range []string{`{"destination":"Billing"}`, `{}`, `not json`} {
		_, err := destination(dests, bad)
		require.Error(t, err, bad)
	}
	cfg := phoneAgentConfig(control.AgentConfig{TransferDestinations: dests, InboundSpeakOrder: "agent_first", OutboundSpeakOrder: "user_first"},
		false, false)
	require.True(t, cfg.SpeakFirst)
	require.Equal(t, "transfer_call", cfg.Tools[len(cfg.Tools)-1].Name)
	require.False(t, phoneAgentConfig(control.AgentConfig{OutboundSpeakOrder: "user_first"}, true, false).SpeakFirst)
	require.Empty(t, phoneAgentConfig(control.AgentConfig{TransferDestinations: dests}, false, true).Tools, "loopback has no tools")
}

// phoneAgentConfig is the engine configuration of a phone call of agent a
// as the phone door makes it: its tools from the node's chain, resolved
// for a call with a SIP leg, none in loopback.
func phoneAgentConfig(a control.AgentConfig, outbound, loopback bool) agent.Config {
	var tools []agent.Tool
	if !loopback {
		chain := NewChain(slog.New(slog.DiscardHandler), nil, WebhookTools{}, Transfers{})
		tools = chain.Resolve(Info{Agent: a, Channel: ChannelPhone, Leg: noLeg{}}).specs
	}
	return engineConfig(ChannelPhone, a, engineCall{outbound: outbound, loopback: loopback, tools: tools})
}

// noLeg is a SIP leg that transfers nowhere and sends no keys.
type noLeg struct{}

func (noLeg) Transfer(context.Context, string) error { return nil }
func (noLeg) Bridged() bool                          { return false }
func (noLeg) SendDTMF(string) error                  { return nil }
