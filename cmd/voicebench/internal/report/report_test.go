package report

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
)

func TestNewDist(t *testing.T) {
	var v []float64
	for i := 100; i >= 1; i-- {
		v = append(v, float64(i))
	}
	d := NewDist(v)
	require.Equal(t, Dist{N: 100, Min: 1, P50: 50, P95: 95, P99: 99, Max: 100, Mean: 50.5}, d)
	require.Equal(t, Dist{}, NewDist(nil))
	require.Equal(t, 7.0, NewDist([]float64{7}).P99)
}

func sampleReport() *Report {
	var calls []load.CallResult
	var h rtpstat.Histogram
	for i := range 10 {
		c := load.CallResult{Index: i, Codec: "PCMU", Sent: 500, SetupMs: float64(10 + i), OneWayMs: -1, ResponseMs: -1, FirstAudioMs: -1}
		if i == 9 {
			c.Err = "invite: 503 Service Unavailable"
			c.Sent = 0
		} else {
			c.Summary = rtpstat.Summary{Received: 499, Expected: 500, Lost: 1, LossPercent: 0.2, JitterMs: 0.1 * float64(i+1)}
			c.OneWayMs = float64(i) + 0.5
			c.FirstAudioMs = 60 + float64(i)
			c.MOS = 4.4
		}
		calls = append(calls, c)
		h.Add(int64(i) * 100_000)
	}
	r := New(Settings{Mode: "sip", Target: "127.0.0.1:5060", Codec: "PCMU", Topology: "echo", Calls: 10, Rate: 5, HoldS: 30, Lanes: 4, Phases: 4}, calls, &h)
	r.Started = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.Window = &load.Window{LengthS: 30, Calls: 9, Sent: 13500, Received: 13491, Expected: 13500, Lost: 9, LossPct: 0.0667, JitterP99Ms: 0.8, TargetCPUPct: 12.5, TargetUsPerPacket: 27.7}
	r.Samples = []Sample{{T: 1, Calls: 5, TargetCPUPct: 6, HostCPUPct: 20, GenCPUPct: 3}, {T: 2, Calls: 9, TargetCPUPct: 12, HostCPUPct: 30, GenCPUPct: 5}}
	return r
}

func TestSummary(t *testing.T) {
	r := sampleReport()
	s := r.Summary
	require.Equal(t, 10, s.Attempted)
	require.Equal(t, 9, s.OK)
	require.Equal(t, 1, s.Failed)
	require.Equal(t, map[string]int{"invite: 503 Service Unavailable": 1}, s.Errors)
	require.Equal(t, uint64(9*499), s.Received)
	require.Equal(t, uint64(9), s.Lost)
	require.InDelta(t, 100*9.0/4500, s.LossPct, 1e-9)
	require.Equal(t, 9, s.OneWay.N)
	require.Equal(t, 8.5, s.OneWay.Max)
	require.Equal(t, 0, s.Response.N)
	require.Equal(t, 10, s.JitterD.N)
	require.InDelta(t, 0.9, s.JitterD.Max, 1e-9)
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	require.NoError(t, r.WriteFiles(dir))

	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Len(t, back.Calls, 10)
	require.Equal(t, 9, back.Summary.OK)
	require.Equal(t, 27.7, back.Window.TargetUsPerPacket)

	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	text := string(md)
	require.Contains(t, text, "# voicebench: sip against 127.0.0.1:5060")
	require.Contains(t, text, "10 attempted, 9 up until the end, 1 failed")
	require.Contains(t, text, "- 1 × invite: 503 Service Unavailable")
	require.Contains(t, text, "| 13500 | 13491 | 9 | 0.0667 |")
	for _, c := range []string{"cpu.svg", "jitter.svg", "latency.svg"} {
		require.Contains(t, text, "("+c+")")
		f, err := os.Open(filepath.Join(dir, c))
		require.NoError(t, err)
		d := xml.NewDecoder(f)
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, c)
		}
		f.Close()
	}
	cpu, _ := os.ReadFile(filepath.Join(dir, "cpu.svg"))
	r.OmitCalls = true
	require.NoError(t, r.WriteFiles(dir))
	b, err = os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var slim Report
	require.NoError(t, json.Unmarshal(b, &slim))
	require.Empty(t, slim.Calls)
	require.Equal(t, 9, slim.Summary.OK, "the summary still counts every call")
	require.True(t, strings.Contains(string(cpu), ">target<"), "the target's CPU is drawn when measured")
}

func TestFindMaxMarkdown(t *testing.T) {
	r := sampleReport()
	r.Window = nil
	r.Steps = []Step{{Calls: 100, Pass: true, Window: load.Window{TargetCPUPct: 10}},
		{Calls: 200, Pass: false, Reason: "loss 0.3% > 0.1%", Window: load.Window{CoreStealPct: []float64{2.25, 7.5}}}}
	r.MaxSustained, r.Bound = 100, "loss ≤ 0.1%, p99 |D| ≤ 2 ms, no setup failures"
	var sb strings.Builder
	r.Markdown(&sb, nil)
	require.Contains(t, sb.String(), "**Largest sustained: 100 calls.**")
	require.Contains(t, sb.String(), "| 200 | **no** |")
	require.Contains(t, sb.String(), "| 7.5 | loss 0.3% > 0.1% |", "the most steal of one core, beside the reason")
	require.Contains(t, sb.String(), "| 0.0 |  |", "a step with no steal measured shows 0")

	// The first step failed: the knee is below --start, not 0.
	r.Steps, r.MaxSustained = r.Steps[1:], 0
	sb.Reset()
	r.Markdown(&sb, nil)
	require.Contains(t, sb.String(), "**Largest sustained: below 200 calls (the first step failed; search again with a lower --start).**")
}

func TestFinalSteps(t *testing.T) {
	steps := []Step{{Calls: 10, Pass: true}, {Calls: 20}, {Calls: 20, Retry: true, Pass: true}, {Calls: 30}, {Calls: 30, Retry: true}}
	got := FinalSteps(steps)
	require.Equal(t, []Step{{Calls: 10, Pass: true}, {Calls: 20, Retry: true, Pass: true}, {Calls: 30, Retry: true}}, got)
}
