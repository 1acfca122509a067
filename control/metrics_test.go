package control_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// promtool returns the path of Prometheus's linter; the test skips without
// it, or fails under CI=true (Debian package prometheus, which
// deploy/debian-deps.sh installs for tests).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not installed (Debian package prometheus)")
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	return p
}

// LintMetrics runs promtool check metrics on an exposition and fails the
// test with its findings.
func lintMetrics(t *testing.T, body []byte) {
	t.Helper()
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
}

// /metrics, with the node's media series, passes promtool's strict parser
// and linter: the pacer's tick lateness and cost were gauges with a
// quantile label, which it refuses; they are summaries now.
func TestMetricsPassPromtool(t *testing.T) {
	db := sqltest.New(t, migrations.SQLite)
	a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example"})
	a.Srv.SetMediaStats(func() control.MediaStats {
		return control.MediaStats{
			Pacer: &control.PacerStats{Streams: 3, Ticks: 500, Skipped: 1,
				LateP50: 40 * time.Microsecond, LateP99: 900 * time.Microsecond, LateMax: 2 * time.Millisecond,
				CostP50: 120 * time.Microsecond, CostP99: 400 * time.Microsecond, CostMax: time.Millisecond,
				LateN: 500, LateSum: 30 * time.Millisecond, CostN: 500, CostSum: 70 * time.Millisecond},
			Sessions:   map[string]int{"phone": 2, "browser": 1},
			Packets:    map[string]control.PacketCounts{"phone": {In: 100, Out: 99, Lost: 1}},
			SendErrors: 2,
		}
	})
	a.Do("GET", "/v1/healthz", "", nil) // some HTTP series too
	res, err := a.Srv.App().Test(httptest.NewRequest("GET", "/metrics", nil))
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	var body bytes.Buffer
	_, err = body.ReadFrom(res.Body)
	require.NoError(t, err)
	text := body.String()
	for _, s := range []string{
		"# TYPE voiced_media_pacer_tick_lateness_seconds summary",
		`voiced_media_pacer_tick_lateness_seconds{quantile="0.99"} 0.0009`,
		`voiced_media_pacer_tick_lateness_seconds{quantile="1"} 0.002`,
		"voiced_media_pacer_tick_lateness_seconds_count 500",
		"voiced_media_pacer_tick_cost_seconds_sum 0.07",
	} {
		require.True(t, strings.Contains(text, s), "missing %q in:\n%s", s, text)
	}
	lintMetrics(t, body.Bytes())
}
