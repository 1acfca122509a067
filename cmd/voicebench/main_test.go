package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/echo"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/report"
)

func TestParseLoadFlags(t *testing.T) {
	var stderr bytes.Buffer
	f, err := parseLoadFlags([]string{"--mode", "rtpengine"}, &stderr)
	require.NoError(t, err)
	require.Equal(t, "relay", f.topology)
	require.Equal(t, 10, f.calls)
	f, err = parseLoadFlags([]string{"--mode", "echo", "--pid", "3,4", "--pid", "5"}, &stderr)
	require.NoError(t, err)
	require.Equal(t, "echo", f.topology)
	require.Equal(t, intList{3, 4, 5}, f.pids)
	f, err = parseLoadFlags([]string{"--to", "+1555", "--topology", "echo"}, &stderr)
	require.NoError(t, err)
	require.Equal(t, "echo", f.topology)

	for _, bad := range [][]string{
		{"--mode", "sip"},
		{"--mode", "echo", "--calls", "0"},
		{"--mode", "echo", "--find-max", "--step", "0", "--factor", "1"},
		{"--mode", "echo", "stray"},
		{"--mode", "webrtc", "--api-key", "k"},
	} {
		_, err := parseLoadFlags(bad, &stderr)
		require.Error(t, err, "%v", bad)
	}
}

func TestJudge(t *testing.T) {
	f := &loadFlags{maxLoss: 0.1, maxJitter: 2 * time.Millisecond}
	ok := load.Window{Received: 1000, LossPct: 0.05, JitterP99Ms: 1.5, GeneratorCPUPct: 40}
	pass, why := judge(f, ok, 0)
	require.True(t, pass, why)
	for _, tc := range []struct {
		w      load.Window
		failed int
		want   string
	}{
		{load.Window{Received: 1000, LossPct: 0.2}, 0, "loss 0.200% > 0.1%"},
		{load.Window{Received: 1000, JitterP99Ms: 2.5}, 0, "p99 |D| 2.50 ms > 2 ms"},
		{load.Window{Received: 1000}, 3, "3 setup failures"},
		{load.Window{}, 0, "no media came back"},
		{load.Window{Received: 1000, PacerSkipped: 2}, 0, "generator-bound"},
		{load.Window{Received: 1000, PacerLateP99Ms: 3}, 0, "ticks late p99 3.00 ms"},
	} {
		pass, why := judge(f, tc.w, tc.failed)
		require.False(t, pass)
		require.Contains(t, why, tc.want)
		require.NotContains(t, why, "steal", "no steal measured, none named")
	}

	// Steal neither passes nor fails a step; a failed step's reason names
	// the core the hypervisor took the most from, from 1% of it.
	stolen := ok
	stolen.CoreStealPct = []float64{0.4, 6.5}
	pass, why = judge(f, stolen, 0)
	require.True(t, pass, why)
	stolen.JitterP99Ms = 9
	pass, why = judge(f, stolen, 0)
	require.False(t, pass)
	require.Equal(t, "p99 |D| 9.00 ms > 2 ms; host steal 6.5% on cpu1", why)
	stolen.CoreStealPct = []float64{0.9, 0.2}
	_, why = judge(f, stolen, 0)
	require.Equal(t, "p99 |D| 9.00 ms > 2 ms", why, "under 1% of a core is not named")
}

// echoPorts starts an echo server on count consecutive free ports.
func echoPorts(t *testing.T, count int) netip.AddrPort {
	t.Helper()
	lo := netip.MustParseAddr("127.0.0.1")
	for range 20 {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		p := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		if p+count > 65535 {
			continue
		}
		s, err := echo.Listen(lo, p, count)
		if err != nil {
			continue
		}
		t.Cleanup(func() { s.Close() })
		return netip.AddrPortFrom(lo, uint16(p))
	}
	t.Fatal("no free port range")
	return netip.AddrPort{}
}

func readResults(t *testing.T, dir string) report.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var r report.Report
	require.NoError(t, json.Unmarshal(b, &r))
	return r
}

func TestLoadFindMaxAndCompare(t *testing.T) {
	first := echoPorts(t, 6)
	dir := t.TempDir()
	common := []string{"--mode", "echo", "--echo", first.String(), "--echo-count", "6", "--rate", "200", "--settle", "0s", "--quiet", "--gap", "300ms"}
	var stdout, stderr bytes.Buffer

	plain := filepath.Join(dir, "plain")
	err := run(context.Background(), append([]string{"load", "--calls", "4", "--hold", "1s", "--out", plain}, common...), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	require.Contains(t, stdout.String(), "4 calls attempted, 4 ok, 0 failed")
	r := readResults(t, plain)
	require.NotNil(t, r.Window)
	require.Equal(t, 4, r.Window.Calls)
	require.Zero(t, r.Window.Lost)
	require.Equal(t, 4, r.Summary.OneWay.N, "every G.711 call is probed")
	require.Len(t, r.Window.CoreStealPct, len(r.Window.CoreCPUPct), "steal is measured for every core")
	for _, v := range r.Window.CoreStealPct {
		require.True(t, v >= 0 && v <= 100, "steal %v%% of a core", v)
	}
	for _, f := range []string{"summary.md", "latency.svg", "jitter.svg", "cpu.svg"} {
		require.FileExists(t, filepath.Join(plain, f))
	}

	knee := filepath.Join(dir, "knee")
	stdout.Reset()
	err = run(context.Background(), append([]string{"load", "--find-max", "--start", "2", "--step", "2", "--max", "6", "--window", "700ms",
		"--max-jitter", "100ms", "--out", knee}, common...), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	k := readResults(t, knee)
	require.Len(t, k.Steps, 3)
	for i, st := range k.Steps {
		require.Equal(t, 2*(i+1), st.Calls)
		require.True(t, st.Pass, st.Reason)
	}
	require.Equal(t, 6, k.MaxSustained)
	require.Contains(t, stdout.String(), "largest sustained: 6 calls")

	// A bound nothing meets: the step fails, is measured again, fails again.
	strict := filepath.Join(dir, "strict")
	err = run(context.Background(), append([]string{"load", "--find-max", "--start", "2", "--step", "2", "--max", "6", "--window", "300ms",
		"--max-jitter", "1ns", "--out", strict}, common...), &stdout, &stderr)
	require.NoError(t, err)
	sr := readResults(t, strict)
	require.Len(t, sr.Steps, 2)
	require.False(t, sr.Steps[0].Retry)
	require.True(t, sr.Steps[1].Retry)
	require.False(t, sr.Steps[1].Pass)
	require.Contains(t, sr.Steps[1].Reason, "p99 |D|")
	require.Zero(t, sr.MaxSustained)
	require.Contains(t, stdout.String(), "largest sustained: below 2 calls (the first step failed")

	out := filepath.Join(dir, "cmp.md")
	err = run(context.Background(), []string{"compare", "--out", out, "--title", "Echo twice", "--ratio", "a:b", "--ratio", "a:missing",
		"a=" + plain, "b=" + plain, "a=" + knee, "c=" + strict}, &stdout, &stderr)
	require.NoError(t, err)
	md, err := os.ReadFile(out)
	require.NoError(t, err)
	text := string(md)
	require.Contains(t, text, "## Echo twice")
	require.Contains(t, text, "| a | voicebench echo "+first.String())
	require.Contains(t, text, "| a / missing | not measured | not measured |")
	require.Contains(t, text, "| p99 \\|D\\| ms | host steal % | largest sustained N |")
	require.Contains(t, text, "- b #1 (`"+plain+"`)")
	require.FileExists(t, filepath.Join(dir, "cmp-cpu.svg"), "the find-max run is charted")
	// a's two runs are averaged: 4 calls and 6 calls make 5.
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "| a |") {
			require.Contains(t, line, "| 2 | 5 (4–6) |")
		}
		if strings.HasPrefix(line, "| c |") {
			require.True(t, strings.HasSuffix(line, "| < 2 |"), "a knee below the first step is shown as such, not as 0: %s", line)
		}
	}
	require.Contains(t, text, "| c |")

	// The echo floor on any free ports, found through its list file.
	list := filepath.Join(dir, "echo.addrs")
	ctx, cancel := context.WithCancel(context.Background())
	echoDone := make(chan error, 1)
	var echoOut bytes.Buffer
	go func() { echoDone <- runEcho(ctx, []string{"--count", "3", "--list", list}, &echoOut, &stderr) }()
	require.Eventually(t, func() bool { _, err := os.Stat(list); return err == nil }, 2*time.Second, 10*time.Millisecond)
	listed := filepath.Join(dir, "listed")
	err = run(context.Background(), []string{"load", "--mode", "echo", "--echo-list", list, "--calls", "3", "--hold", "500ms", "--settle", "0s",
		"--quiet", "--out", listed}, &stdout, &stderr)
	require.NoError(t, err)
	require.Positive(t, readResults(t, listed).Window.Received)
	cancel()
	require.NoError(t, <-echoDone)

	err = run(context.Background(), []string{"compare", "nonsense"}, &stdout, &stderr)
	require.Error(t, err)
	err = run(context.Background(), []string{"bogus"}, &stdout, &stderr)
	require.Error(t, err)
	require.NoError(t, run(context.Background(), []string{"help"}, &stdout, &stderr))
}
