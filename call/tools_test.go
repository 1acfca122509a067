package call

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/webhook"
)

// keysLeg records the keys a call sends.
type keysLeg struct {
	noLeg
	sent []string
}

func (l *keysLeg) SendDTMF(d string) error { l.sent = append(l.sent, d); return nil }

// slowSource offers one tool that never answers before its context ends.
type slowSource struct{}

func (slowSource) Tools(*Info) []llm.Tool { return []llm.Tool{{Name: "slow"}} }
func (slowSource) Run(ctx context.Context, _ *Info, _ llm.ToolCall) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// TestChainResolvesPerCall: a call's tools come from the sources at its
// start; send_dtmf only on outbound phone calls, transfer_call only with a
// leg and destinations; an unknown tool, a bad argument and a source past
// the deadline are failures the model gets back.
func TestChainResolvesPerCall(t *testing.T) {
	chain := NewChain(slog.New(slog.DiscardHandler), nil, WebhookTools{X: nopExchanger{}}, Transfers{}, Keypad{}, slowSource{})
	chain.deadline = 50 * time.Millisecond
	a := control.AgentConfig{Tools: []control.Tool{{Name: "book_table"}},
		TransferDestinations: []control.TransferDestination{{Name: "Desk", Number: "+14155550123"}}}
	names := func(ct *CallTools) (out []string) {
		for _, s := range ct.Specs() {
			out = append(out, s.Name)
		}
		return out
	}
	leg := &keysLeg{}
	out := chain.Resolve(Info{Agent: a, Direction: calllog.DirectionOutbound, Channel: ChannelPhone, Leg: leg})
	require.Equal(t, []string{"book_table", TransferToolName, KeypadToolName, "slow"}, names(out))
	in := chain.Resolve(Info{Agent: a, Direction: calllog.DirectionInbound, Channel: ChannelPhone, Leg: leg})
	require.Equal(t, []string{"book_table", TransferToolName, "slow"}, names(in))
	web := chain.Resolve(Info{Agent: a, Direction: calllog.DirectionWeb, Channel: ChannelBrowser})
	require.Equal(t, []string{"book_table", "slow"}, names(web))

	ctx := context.Background()
	res, err := out.RunTool(ctx, llm.ToolCall{ID: "c1", Name: KeypadToolName, Arguments: `{"digits":"1#"}`})
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"sent","digits":"1#"}`, res)
	require.Equal(t, []string{"1#"}, leg.sent)
	_, err = out.RunTool(ctx, llm.ToolCall{ID: "c2", Name: KeypadToolName, Arguments: `{"digits":"1x"}`})
	require.Error(t, err)
	_, err = web.RunTool(ctx, llm.ToolCall{ID: "c3", Name: KeypadToolName, Arguments: `{"digits":"1"}`})
	require.ErrorContains(t, err, "no tool named")
	_, err = web.RunTool(ctx, llm.ToolCall{ID: "c4", Name: "slow"})
	require.ErrorContains(t, err, "did not answer within")
	require.Len(t, leg.sent, 1)
}

// nopExchanger is a tool exchange the test never reaches.
type nopExchanger struct{}

func (nopExchanger) Tool(context.Context, int64, webhook.ToolRequest) (webhook.ToolResponse, error) {
	return webhook.ToolResponse{}, errors.New("unused")
}
