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
	"github.com/voiced/voiced/media/agent"
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

// growSource offers "find"; running it makes "found" (and a clash with
// another source's "book_table") callable in that call.
type growSource struct{ grown map[int64]bool }

func (growSource) Tools(*Info) []llm.Tool { return []llm.Tool{{Name: "find"}} }
func (g growSource) Run(_ context.Context, c *Info, tc llm.ToolCall) (string, error) {
	if tc.Name == "find" {
		g.grown[c.CallID] = true
		return "found it", nil
	}
	return "ran " + tc.Name, nil
}
func (g growSource) Grown(c *Info) []llm.Tool {
	if !g.grown[c.CallID] {
		return nil
	}
	return []llm.Tool{{Name: "found"}, {Name: "book_table"}}
}

// TestChainGrows: a Grower's tools join the call's offer after the run
// that loads them, only in that call, and run through that source; a
// grown name another source offers already stays the other's.
func TestChainGrows(t *testing.T) {
	g := growSource{grown: map[int64]bool{}}
	chain := NewChain(slog.New(slog.DiscardHandler), nil, WebhookTools{X: nopExchanger{}}, g)
	a := control.AgentConfig{Tools: []control.Tool{{Name: "book_table"}}}
	one, two := chain.Resolve(Info{CallID: 1, Agent: a, Direction: calllog.DirectionWeb}), chain.Resolve(Info{CallID: 2, Agent: a, Direction: calllog.DirectionWeb})
	var _ agent.ToolGrower = one
	ctx := context.Background()
	require.Empty(t, one.GrownTools())
	_, err := one.RunTool(ctx, llm.ToolCall{ID: "c1", Name: "found"})
	require.ErrorContains(t, err, "no tool named", "not before it is found")
	out, err := one.RunTool(ctx, llm.ToolCall{ID: "c2", Name: "find"})
	require.NoError(t, err)
	require.Equal(t, "found it", out)
	require.Equal(t, []llm.Tool{{Name: "found"}}, one.GrownTools())
	out, err = one.RunTool(ctx, llm.ToolCall{ID: "c3", Name: "found"})
	require.NoError(t, err)
	require.Equal(t, "ran found", out)
	require.Empty(t, two.GrownTools(), "another call did not search")
}
