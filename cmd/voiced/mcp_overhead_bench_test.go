package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/call"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/storage"
)

// oneServer is a one-server catalog: the storage boundary (it is read
// once, at the call's start, outside the measured path).
type oneServer storage.MCPServer

func (s oneServer) MCPServers(context.Context, int64) ([]storage.MCPServer, error) {
	return []storage.MCPServer{storage.MCPServer(s)}, nil
}

type noopArgs struct {
	Text string `json:"text"`
}

// BenchmarkMCPToolCall measures voiced's own overhead per MCP tool call:
// each iteration makes one tools/call to the same trivial go-sdk MCP
// server on loopback (its tool returns at once) twice, interleaved:
// directly through a go-sdk client session (direct_*), and the way a
// call's model does, through the call's tool chain and the MCP tool
// source (voiced_*). overhead_p99_us is voiced_p99_us - direct_p99_us
// (issue 28: at most 5 ms); overhead_mean_us the difference of means.
// Tool webhook events are not recorded (a mic session's): that write is
// measured with the webhook benchmarks.
func BenchmarkMCPToolCall(b *testing.B) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "noop", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "noop", Description: "Returns at once."}, func(_ context.Context, _ *sdk.CallToolRequest, in noopArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer hs.Close()
	ctx := context.Background()

	direct, err := sdk.NewClient(&sdk.Implementation{Name: "direct", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	id := storage.NewUUID()
	name := mcp.ToolName(id, "noop")
	cached, _ := json.Marshal([]mcp.CachedTool{{Type: "function", Name: name, MCP: mcp.ToolRef{ServerID: id, ToolName: "noop"}}})
	cat := mcp.NewCallCatalog(oneServer{ID: id, DisplayName: "noop", URL: hs.URL, Enabled: true, CachedTools: cached},
		mcp.NewConnector(mcp.ConnectorConfig{AllowLoopback: true}), nil)
	chain := call.NewChain(slog.New(slog.DiscardHandler), nil, &call.MCPTools{Catalog: func() call.MCPCatalog { return cat }, Log: slog.New(slog.DiscardHandler)})
	defer chain.End(1)
	ct := chain.Resolve(call.Info{CallID: 1, OrgID: 1, Direction: calllog.DirectionTest, Channel: call.ChannelRealtime,
		Agent: control.AgentConfig{MCPServerIDs: []string{id}, MCPToolSearchThreshold: 40}})

	viaDirect := func() {
		res, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "noop", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	viaVoiced := func() {
		out, err := ct.RunTool(ctx, llm.ToolCall{ID: "c", Name: name, Arguments: `{"text":"hi"}`})
		if err != nil || out != "hi" {
			b.Fatal(err, out)
		}
	}
	viaDirect() // both sessions open before the clock starts
	viaVoiced()
	var ds, vs []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		viaDirect()
		t1 := time.Now()
		viaVoiced()
		ds, vs = append(ds, t1.Sub(t0)), append(vs, time.Since(t1))
	}
	mean := func(l []time.Duration) (s time.Duration) {
		for _, d := range l {
			s += d
		}
		return s / time.Duration(len(l))
	}
	dm, vm := mean(ds), mean(vs)
	slices.Sort(ds)
	slices.Sort(vs)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	p := func(l []time.Duration, q int) time.Duration { return l[len(l)*q/100] }
	b.ReportMetric(us(p(ds, 50)), "direct_p50_us")
	b.ReportMetric(us(p(ds, 99)), "direct_p99_us")
	b.ReportMetric(us(p(vs, 50)), "voiced_p50_us")
	b.ReportMetric(us(p(vs, 99)), "voiced_p99_us")
	b.ReportMetric(us(p(vs, 99)-p(ds, 99)), "overhead_p99_us")
	b.ReportMetric(us(vm-dm), "overhead_mean_us")
}
