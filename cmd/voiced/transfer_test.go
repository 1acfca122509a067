package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
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
	cfg := phoneAgentConfig(callInfo{agent: control.AgentConfig{TransferDestinations: dests, InboundSpeakOrder: "agent_first", OutboundSpeakOrder: "user_first"}},
		"inbound", false, "", "")
	require.True(t, cfg.SpeakFirst)
	require.Equal(t, "transfer_call", cfg.Tools[len(cfg.Tools)-1].Name)
	require.False(t, phoneAgentConfig(callInfo{agent: control.AgentConfig{OutboundSpeakOrder: "user_first"}}, "outbound", false, "", "").SpeakFirst)
	require.Empty(t, phoneAgentConfig(callInfo{agent: control.AgentConfig{TransferDestinations: dests}}, "inbound", true, "", "").Tools, "loopback has no tools")
}
