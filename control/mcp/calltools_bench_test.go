package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/storage"
)

// servers is a one-server catalog: the storage boundary of the benchmark.
type servers []storage.MCPServer

func (s servers) MCPServers(context.Context, int64) ([]storage.MCPServer, error) { return s, nil }

// BenchmarkToolCall measures one mid-call MCP tool call (CallTools.Run on
// an open session) against a go-sdk tool server on loopback whose tool
// does nothing: an upper bound of voiced's own cost per tool call, the
// server's MCP handling included. p99_us is the figure of issue 28
// (goal: at most 5 ms).
func BenchmarkToolCall(b *testing.B) {
	ts := newToolServer(b)
	id := storage.NewUUID()
	cached, _ := json.Marshal([]mcp.CachedTool{{Type: "function", Name: mcp.ToolName(id, "echo"), MCP: mcp.ToolRef{ServerID: id, ToolName: "echo"}}})
	cat := mcp.NewCallCatalog(servers{{ID: id, URL: ts.URL, Enabled: true, CachedTools: cached}}, mcp.NewConnector(mcp.ConnectorConfig{AllowLoopback: true}), nil)
	ctx := context.Background()
	ct, err := cat.ForCall(ctx, 1, []string{id}, 40)
	if err != nil {
		b.Fatal(err)
	}
	defer ct.Close()
	name := mcp.ToolName(id, "echo")
	if _, err := ct.Run(ctx, name, `{"text":"warm"}`); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := ct.Run(ctx, name, `{"text":"hi"}`); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
}
