package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestMain runs this test binary as voiced when VOICED_TEST_AS_VOICED=1:
// deploy/local-cluster.sh (VOICED_BIN=<it>) and startProcess start roles
// that are the code under test, with no separate build, in processes of
// their own that a test can kill -9.
func TestMain(m *testing.M) {
	if os.Getenv("VOICED_TEST_AS_VOICED") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// localCluster is deploy/local-cluster.sh with a state directory of its
// own, this test binary as voiced, a fresh PostgreSQL database and a
// Redis of its own.
type localCluster struct {
	dir string
	env []string
}

// clusterStatus is `deploy/local-cluster.sh status`.
type clusterStatus struct {
	OK          bool          `json:"ok"`
	APIURL      string        `json:"api_url"`
	APIKey      string        `json:"api_key"`
	SIPAddr     string        `json:"sip_addr"`
	DatabaseURL string        `json:"database_url"`
	RedisURL    string        `json:"redis_url"`
	Nodes       []clusterNode `json:"nodes"`
}

type clusterNode struct {
	Role    string `json:"role"`
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Alive   bool   `json:"alive"`
	Log     string `json:"log"`
	SIPAddr string `json:"sip_addr"`
	APIURL  string `json:"api_url"`
	HTTPURL string `json:"http_url"`
}

func (s clusterStatus) node(name string) clusterNode {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	return clusterNode{}
}

// requireTool fails (never skips) when a program the cluster needs is
// missing: CI installs them all (deploy/debian-deps.sh test).
func requireTool(t testing.TB, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s not found (Debian package %s): deploy/debian-deps.sh test installs it", name, pkg)
	}
}

func newLocalCluster(t testing.TB, mediaArgs ...string) *localCluster {
	t.Helper()
	for _, tool := range [][2]string{{"kamailio", "kamailio"}, {"sipp", "sip-tester"}, {"redis-server", "redis-server"}, {"redis-cli", "redis-tools"},
		{"psql", "postgresql-client"}} {
		requireTool(t, tool[0], tool[1])
	}
	self, err := os.Executable()
	require.NoError(t, err)
	c := &localCluster{dir: t.TempDir()}
	c.env = append(os.Environ(), "VOICED_TEST_AS_VOICED=1", "VOICED_BIN="+self, "VOICED_CLUSTER_DIR="+c.dir,
		"VOICED_CLUSTER_DATABASE_URL="+sqltest.URL(t, migrations.Postgres), "VOICED_CLUSTER_OWN_REDIS=1",
		"VOICED_CLUSTER_RTP_BASE=47000", "VOICED_CLUSTER_MEDIA_ARGS="+strings.Join(mediaArgs, " "),
		"VOICED_CLUSTER_CONTROL_ARGS=--access-log=false --dev-credit-cents 100000000")
	return c
}

// run runs the script with verb and returns its stdout and error (with
// its stderr in the message).
func (c *localCluster) run(verb string, timeout time.Duration, extraEnv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../../deploy/local-cluster.sh", verb)
	cmd.Env = append(append([]string{}, c.env...), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Its children get stdout and stderr of their own (files), so the
	// script's pipes close when it exits.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("local-cluster.sh %s: %w\n%s", verb, err, errb.String())
	}
	return out.String(), err
}

func (c *localCluster) status(t testing.TB) (clusterStatus, error) {
	t.Helper()
	out, err := c.run("status", 30*time.Second)
	var s clusterStatus
	require.NoError(t, json.Unmarshal([]byte(out), &s), "status prints one JSON object: %q", out)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "one line: %q", out)
	return s, err
}

// up starts the cluster, stops it when the test ends, and returns its
// status.
func (c *localCluster) up(t testing.TB) clusterStatus {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []string{"control-1", "control-2", "media-1", "media-2", "kamailio"} {
				b, _ := os.ReadFile(filepath.Join(c.dir, n+".log"))
				if len(b) > 6000 {
					b = b[len(b)-6000:]
				}
				t.Logf("%s log (tail):\n%s", n, b)
			}
		}
		_, _ = c.run("down", 90*time.Second)
	})
	_, err := c.run("up", 120*time.Second)
	require.NoError(t, err)
	s, err := c.status(t)
	require.NoError(t, err, "every part is up: %+v", s)
	return s
}

// processesIn lists the running processes whose command line mentions
// dir (everything the script starts names its state directory).
func processesIn(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue // exited, waiting for its parent
			}
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

// loopbackNumber gives the cluster's organization a VoIP number on
// loopback answered by an agent (the media nodes run --call-loopback),
// and returns the VoIP connection's and the agent's ids.
func loopbackNumber(t testing.TB, base, key, agent string) (connID, agentID int64) {
	t.Helper()
	api := func(method, path, body string) (int, map[string]any) {
		var out map[string]any
		st := apiCall(t, base, key, method, path, jsonBody(body), &out)
		return st, out
	}
	st, conn := api("POST", "/v1/voip-connections", `{"host":"127.0.0.1","allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := api("POST", "/v1/agents", agent)
	require.Equal(t, 201, st, "%v", ag)
	st, num := api("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, _ = api("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st)
	return objID(conn), objID(ag)
}

func readLog(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestLocalCluster runs deploy/local-cluster.sh (this test binary as
// voiced) and drives the cluster it starts only through what `status`
// prints:
//   - up twice starts it once (the second is a no-op);
//   - sipp places 40 calls through Kamailio's sip_addr and each media node
//     takes at least 30% of them, each ending with the caller's BYE;
//   - SIGTERM to a media node with calls in progress: it answers OPTIONS
//     503 and every one of its calls runs to the caller's hang-up, none
//     cut (--drain-timeout 20 s); then status reports it down (exit 1)
//     and up starts it again;
//   - the `openai` npm realtime client holds a conversation through the
//     second control replica;
//   - down leaves no process behind.
func TestLocalCluster(t *testing.T) {
	requireTool(t, "node", "nodejs")
	requireTool(t, "npm", "npm")
	npmReady(t)
	files := speechFiles(t)
	c := newLocalCluster(t, "--call-loopback", "--stt-base-url", fakeTranscriber(t), "--stt-model", "gpt-4o-transcribe")
	c.env = append(c.env, "VOICED_CLUSTER_DRAIN_TIMEOUT=20s")
	s := c.up(t)
	require.True(t, s.OK)
	require.Regexp(t, `^sk_live_[0-9a-f]+$`, s.APIKey)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, s.SIPAddr)
	require.Contains(t, s.DatabaseURL, "postgres://")
	require.Contains(t, s.RedisURL, "redis://127.0.0.1:")
	var roles []string
	for _, n := range s.Nodes {
		roles = append(roles, n.Role)
		require.True(t, n.Alive, "%+v", n)
		require.Positive(t, n.PID, "%+v", n)
		require.FileExists(t, n.Log)
	}
	require.ElementsMatch(t, []string{"redis", "control", "control", "media", "media", "kamailio"}, roles)
	m1, m2 := s.node("media-1"), s.node("media-2")
	require.NotEqual(t, m1.SIPAddr, m2.SIPAddr)
	require.Equal(t, s.SIPAddr, s.node("kamailio").SIPAddr)

	// up again: nothing new starts.
	_, err := c.run("up", 60*time.Second)
	require.NoError(t, err)
	again, err := c.status(t)
	require.NoError(t, err)
	for _, n := range s.Nodes {
		require.Equal(t, n.PID, again.node(n.Name).PID, "%s kept running", n.Name)
	}

	loopbackNumber(t, s.APIURL, s.APIKey, clusterAgent)
	calls := func(n, rate int, hold time.Duration) *siptest.Proc {
		sc := siptest.Scenario(t, "../../sip/testdata/sipp/uac_proxied.xml.tmpl", struct {
			Proxy  string
			HoldMs int64
		}{s.SIPAddr, hold.Milliseconds()})
		return siptest.Sipp(t, sc, time.Duration(n/rate)*time.Second+hold+30*time.Second, "-s", "+14155550100",
			"-m", strconv.Itoa(n), "-r", strconv.Itoa(rate), "-l", strconv.Itoa(n), s.SIPAddr)
	}

	// 40 calls through Kamailio.
	require.NoError(t, calls(40, 20, time.Second).Wait(), "every call through Kamailio completes, its BYE answered 200")
	var ended [2]map[int64]string
	require.Eventually(t, func() bool {
		ended = [2]map[int64]string{callsEnded(readLog(t, m1.Log)), callsEnded(readLog(t, m2.Log))}
		return len(ended[0])+len(ended[1]) == 40
	}, 15*time.Second, 100*time.Millisecond, "the media nodes log their calls' ends")
	for i, m := range ended {
		require.GreaterOrEqual(t, len(m), 12, "media-%d took at least 30%% of the 40 calls", i+1)
		for id, reason := range m {
			require.Equal(t, "caller_hangup", reason, "call %d on media-%d", id, i+1)
		}
	}
	t.Logf("40 calls through Kamailio: media-1 %d, media-2 %d", len(ended[0]), len(ended[1]))

	// Drain: six calls of 3 s over both nodes, then SIGTERM to media-2
	// while they are up.
	answered := func(n clusterNode) int { return strings.Count(readLog(t, n.Log), `msg="call answered"`) }
	before1, before2 := answered(m1), answered(m2)
	held := calls(6, 20, 3*time.Second)
	require.Eventually(t, func() bool { return answered(m1)+answered(m2) == before1+before2+6 }, 10*time.Second, 20*time.Millisecond)
	onM2 := answered(m2) - before2
	require.Positive(t, onM2, "media-2 has calls in progress")
	sigterm := time.Now()
	require.NoError(t, syscall.Kill(m2.PID, syscall.SIGTERM))
	require.Eventually(t, func() bool { return sipOptions(t, m2.SIPAddr) == 503 }, 2*time.Second, 20*time.Millisecond,
		"a draining node answers OPTIONS 503")
	require.NoError(t, held.Wait(), "every call in progress runs to the caller's BYE")
	require.Eventually(t, func() bool { st, _ := c.status(t); return !st.node("media-2").Alive }, 35*time.Second, 200*time.Millisecond,
		"media-2 exits once its calls are over")
	stopped := time.Now()
	drained := 0
	for id, reason := range callsEnded(readLog(t, m2.Log)) {
		if _, before := ended[1][id]; before {
			continue
		}
		drained++
		require.Equal(t, "caller_hangup", reason, "call %d on media-2: not cut by the drain", id)
	}
	require.Equal(t, onM2, drained, "every call media-2 held ended and was recorded")
	require.Less(t, stopped.Sub(sigterm), 20*time.Second, "media-2 stopped when its calls ended, before --drain-timeout")
	require.Contains(t, readLog(t, m2.Log), `msg=stopped`)
	t.Logf("media-2 drained %d calls in %v", drained, stopped.Sub(sigterm).Round(time.Millisecond))

	// status names the node that is down, and says so in its exit status;
	// up starts that node alone again.
	down, err := c.status(t)
	require.Error(t, err, "status exits non-zero with a node down")
	require.False(t, down.OK)
	require.False(t, down.node("media-2").Alive)
	require.True(t, down.node("media-1").Alive)
	_, err = c.run("up", 60*time.Second)
	require.NoError(t, err)
	s, err = c.status(t)
	require.NoError(t, err)
	require.NotEqual(t, m2.PID, s.node("media-2").PID)
	require.Equal(t, m1.PID, s.node("media-1").PID)

	// The openai npm client, given the second control replica's URL, holds
	// a text and a spoken conversation (passed on to a media node).
	ctl2 := s.node("control-2").APIURL
	require.NotEqual(t, s.APIURL, ctl2)
	openaiClient(t, strings.TrimPrefix(ctl2, "http://"), s.APIKey, "pcm16", files["pcm16"])

	// down stops everything up started, and nothing is left.
	running := strings.Join(processesIn(c.dir), "\n")
	for _, n := range s.Nodes {
		require.Contains(t, "\n"+running, fmt.Sprintf("\n%d: ", n.PID), "%s runs with the state directory on its command line", n.Name)
	}
	_, err = c.run("down", 90*time.Second)
	require.NoError(t, err)
	require.Empty(t, processesIn(c.dir), "down left processes behind")
	_, err = c.status(t)
	require.Error(t, err, "status after down")
}

// clusterAgent is the local cluster's agent: it speaks (espeak-ng) after
// the caller.
const clusterAgent = `{"name":"Loopback","voice":"espeak:en-us","prompt":"Greet.","inbound_speak_order":"user_first"}`
