package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/coord/rediscoord"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// startProcess runs voiced with args in a process of its own (this test
// binary as voiced, through TestMain); cancel sends it SIGTERM, kill SIGKILL. The
// test's cleanup kills what is still running.
func startProcess(t *testing.T, args ...string) (r *role, kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "VOICED_TEST_AS_VOICED=1")
	r = &role{done: make(chan error, 1), stdout: &syncBuf{}, stderr: &syncBuf{}}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	require.NoError(t, cmd.Start())
	go func() { r.done <- cmd.Wait() }()
	r.cancel = func() { _ = cmd.Process.Signal(syscall.SIGTERM) }
	kill = func() { _ = cmd.Process.Kill() }
	t.Cleanup(func() {
		kill()
		select {
		case err := <-r.done:
			r.done <- err
		case <-time.After(10 * time.Second):
		}
	})
	return r, kill
}

// TestMediaNodeLoss: voiced control and two voiced media processes on
// PostgreSQL and Redis, Kamailio in front. sipp places calls through
// Kamailio on both nodes; node A is killed (SIGKILL) mid-call. Then:
//   - A leaves the registry (and so placement) within 5 s;
//   - each of A's calls ends completed with end reason node_lost within
//     15 s, its duration that of the call up to A's last heartbeat (within
//     a few seconds of the real one, billed within one 15 s increment),
//     with one ledger entry and one telephony.complete webhook;
//   - an outbound call (POST /v1/call) ringing on A when it dies ends
//     failed with node_lost, at no charge (billing runs from the answer);
//   - B's calls run on and end normally;
//   - calls started within 5 s of the kill all complete on B: inbound
//     ones through Kamailio, and outbound ones (POST /v1/call) that the
//     placement puts there;
//   - node B, killed and restarted at once under the same id (never out
//     of the registry), ends the call its earlier life held at start;
//   - no call of the run is reported twice.
func TestMediaNodeLoss(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	kamBin := siptest.Binary(t, "kamailio", "kamailio")
	dbURL, redisURL := sqltest.URL(t, migrations.Postgres), isolatedRedis(t)
	secret := strings.Repeat("c0ffee", 6)

	// Every webhook delivery, by call.
	type complete struct {
		Type string `json:"type"`
		Data struct {
			CallID          int64   `json:"call_id"`
			EndReason       string  `json:"end_reason"`
			DurationSeconds int64   `json:"duration_seconds"`
			BillableMinutes float64 `json:"billable_minutes"`
		} `json:"data"`
	}
	var hookMu sync.Mutex
	completes := map[int64][]complete{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev complete
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &ev) == nil && ev.Type == "telephony.complete" {
			hookMu.Lock()
			completes[ev.Data.CallID] = append(completes[ev.Data.CallID], ev)
			hookMu.Unlock()
		}
		w.WriteHeader(204)
	}))
	defer hook.Close()

	ctl := startRole(t, "control", "--data-dir", t.TempDir(), "--database-url", dbURL, "--redis-url", redisURL,
		"--http-addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0", "--cluster-secret", secret, "--access-log=false",
		"--dev-credit-cents", "100000000")
	base := "http://" + ctl.waitLog(t, `http_addr=(127\.0\.0\.1:\d+)`)
	internal := "http://" + ctl.waitLog(t, `internal_addr=(127\.0\.0\.1:\d+)`)
	key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(ctl.stdout.String())
	require.NotEmpty(t, key)
	api := func(method, path, body string) (int, map[string]any) {
		var out map[string]any
		st := apiCall(t, base, key, method, path, jsonBody(body), &out)
		return st, out
	}
	connID, agentID := loopbackNumber(t, base, key, `{"name":"Loopback"}`)
	st, wh := api("PUT", "/v1/webhook", fmt.Sprintf(`{"url":%q}`, hook.URL+"/hook"))
	require.Equal(t, 200, st, "%v", wh)

	// Two media nodes, each its own process.
	ports := [2]int{siptest.FreePort(t, "127.0.0.1"), siptest.FreePort(t, "127.0.0.1")}
	ids := [2]string{fmt.Sprintf("loss-a-%d", time.Now().UnixNano()), fmt.Sprintf("loss-b-%d", time.Now().UnixNano())}
	var nodes [2]*role
	var kills [2]func()
	startMedia := func(i int) {
		nodes[i], kills[i] = startProcess(t, "media", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0",
			"--sip-addr", "127.0.0.1:"+strconv.Itoa(ports[i]), "--rtp-ports", []string{"45000-45499", "45500-45999"}[i], "--webrtc-udp-addr", "127.0.0.1:0",
			"--call-loopback", "--sip-trusted", "127.0.0.1", "--control-url", internal, "--cluster-secret", secret, "--redis-url", redisURL, "--node-id", ids[i])
	}
	startMedia(0)
	startMedia(1)
	for _, n := range nodes {
		n.waitLog(t, `media node serving" http_addr=(127\.0\.0\.1:\d+)`)
	}
	opt, err := redis.ParseURL(redisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	reg, err := rediscoord.New(rediscoord.Config{}, nil, rdb)
	require.NoError(t, err)
	defer reg.Close()
	registered := func(id string) bool {
		ns, err := reg.Nodes(context.Background())
		require.NoError(t, err)
		return slices.ContainsFunc(ns, func(n coord.Node) bool { return n.ID == id })
	}
	require.True(t, registered(ids[0]) && registered(ids[1]))

	kam := startKamailio(t, kamBin, ports[:])
	calls := func(n, rate int, hold time.Duration) *siptest.Proc {
		sc := siptest.Scenario(t, "../../sip/testdata/sipp/uac_proxied.xml.tmpl", struct {
			Proxy  string
			HoldMs int64
		}{kam.addr, hold.Milliseconds()})
		return siptest.Sipp(t, sc, time.Duration(n/rate)*time.Second+hold+20*time.Second, "-s", "+14155550100",
			"-m", strconv.Itoa(n), "-r", strconv.Itoa(rate), "-l", strconv.Itoa(n), kam.addr)
	}
	answeredRe := regexp.MustCompile(`msg="call answered".* call_id=(\d+)`)
	answered := func(n *role) []int64 {
		var out []int64
		for _, m := range answeredRe.FindAllStringSubmatch(n.stderr.String(), -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			out = append(out, id)
		}
		return out
	}

	// Outbound calls (POST /v1/call) to a callee that rings and never
	// answers, placed until one is on A: placement picks the node with
	// fewer calls by their last heartbeats, so a second apart.
	ring := siptest.Sipp(t, "../../sip/testdata/sipp/uas_noanswer.xml", 2*time.Minute)
	st, conn := api("PATCH", fmt.Sprintf("/v1/voip-connections/%d", connID), fmt.Sprintf(`{"port":%d}`, ring.Port))
	require.Equal(t, 200, st, "%v", conn)
	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	defer db.Close()
	var ringing, ringingOnA []int64
	for len(ringingOnA) == 0 && len(ringing) < 4 {
		if len(ringing) > 0 {
			time.Sleep(1100 * time.Millisecond) // a heartbeat with the last call
		}
		st, out := api("POST", "/v1/call", fmt.Sprintf(`{"agent_id":%d,"from_number":"+14155550100","to_number":"+14155550124"}`, agentID))
		require.Equal(t, 201, st, "%v", out)
		id := int64(out["call_id"].(float64))
		ringing = append(ringing, id)
		var node sql.NullString
		require.NoError(t, db.QueryRow(`SELECT node_id FROM calls WHERE id = $1`, id).Scan(&node))
		if node.String == ids[0] {
			ringingOnA = append(ringingOnA, id)
		}
	}
	require.NotEmpty(t, ringingOnA, "an outbound call placed on A")
	t.Logf("%d outbound calls ringing, %d of them on A", len(ringing), len(ringingOnA))

	// Eight calls held 8 s, round-robin over both nodes.
	const hold = 8 * time.Second
	calls(8, 20, hold)
	require.Eventually(t, func() bool { return len(answered(nodes[0]))+len(answered(nodes[1])) == 8 }, 10*time.Second, 20*time.Millisecond)
	onA, onB := answered(nodes[0]), answered(nodes[1])
	require.NotEmpty(t, onA, "node A holds calls")
	require.NotEmpty(t, onB, "node B holds calls")
	time.Sleep(3 * time.Second) // calls in progress for a while

	// kill -9 node A.
	killed := time.Now()
	kills[0]()
	<-nodes[0].done

	// Calls started within 5 s of the kill (right away: before the
	// registry or Kamailio has noticed) all complete on node B.
	time.Sleep(500 * time.Millisecond)
	bBefore := len(answered(nodes[1]))
	fresh := calls(20, 10, time.Second)

	// A leaves the registry, so placement, within 5 s.
	require.Eventually(t, func() bool { return !registered(ids[0]) }, 5*time.Second-time.Since(killed), 50*time.Millisecond,
		"the dead node is out of the registry within 5 s")
	outOfPlacement := time.Since(killed)
	require.True(t, registered(ids[1]))
	for range 20 {
		n, err := reg.Pick(context.Background())
		require.NoError(t, err)
		require.Equal(t, ids[1], n.ID, "placement picks the live node only")
	}
	// Outbound calls placed now, within 5 s of the kill, go to B: a trunk
	// (sipp) that challenges, answers and hangs up after a second.
	uas := siptest.Sipp(t, "../../sip/testdata/sipp/uas_auth.xml", 30*time.Second, "-m", "3")
	st, conn = api("PATCH", fmt.Sprintf("/v1/voip-connections/%d", connID), fmt.Sprintf(`{"port":%d,"username":"alice","password":"secret"}`, uas.Port))
	require.Equal(t, 200, st, "%v", conn)
	require.Less(t, time.Since(killed), 5*time.Second, "placed within 5 s of the kill")
	var outbound []int64
	for range 3 {
		st, out := api("POST", "/v1/call", fmt.Sprintf(`{"agent_id":%d,"from_number":"+14155550100","to_number":"+14155550123"}`, agentID))
		require.Equal(t, 201, st, "%v", out)
		outbound = append(outbound, int64(out["call_id"].(float64)))
	}

	// A's calls end with node_lost within 15 s of the kill, billed up to
	// its last heartbeat; an outbound call still ringing there ends
	// failed, at no charge.
	byID := map[int64]map[string]any{}
	require.Eventually(t, func() bool {
		for _, id := range append(slices.Clone(onA), ringingOnA...) {
			_, c := api("GET", fmt.Sprintf("/v1/calls/%d", id), "")
			if c["status"] == "in_progress" || c["billed_at"] == nil {
				return false
			}
			byID[id] = c
		}
		return true
	}, 15*time.Second-time.Since(killed), 50*time.Millisecond, "A's calls end within 15 s of the kill")
	for _, id := range ringingOnA {
		c := byID[id]
		require.Equal(t, "failed", c["status"], "outbound call %d lost while ringing: %v", id, c)
		require.Equal(t, "node_lost", c["end_reason"], "%v", c)
		require.Zero(t, c["billing_total_cents"].(float64), "never answered: no charge")
	}
	ended := time.Since(killed)
	for _, id := range onA {
		c := byID[id]
		require.Equal(t, "node_lost", c["end_reason"], "call %d: %v", id, c)
		start, err := time.Parse(time.RFC3339Nano, c["start_time"].(string))
		require.NoError(t, err)
		realDur := killed.Sub(start).Seconds()
		dur := c["duration_seconds"].(float64)
		require.InDelta(t, realDur, dur, 4, "call %d: billed up to A's last heartbeat (real %.1f s)", id, realDur)
		require.InDelta(t, realDur, c["billable_minutes"].(float64)*60, 15, "call %d: billed within one 15 s increment", id)
		require.Positive(t, c["billing_total_cents"].(float64))
	}
	t.Logf("node A killed: out of the registry after %v, its %d calls ended with node_lost after %v", outOfPlacement.Round(time.Millisecond),
		len(onA), ended.Round(time.Millisecond))

	require.NoError(t, fresh.Wait(), "calls started right after the kill complete")
	require.NoError(t, uas.Wait(), "the outbound calls were placed and completed")
	var newOnB []int64
	for _, id := range answered(nodes[1])[bBefore:] {
		if !slices.Contains(outbound, id) {
			newOnB = append(newOnB, id)
		}
	}
	require.Len(t, newOnB, 20, "every new inbound call was answered by node B")
	for _, id := range outbound {
		require.Contains(t, answered(nodes[1]), id, "outbound call %d placed on B", id)
		var c map[string]any
		require.Eventually(t, func() bool {
			_, c = api("GET", fmt.Sprintf("/v1/calls/%d", id), "")
			return c["status"] == "completed" && c["billed_at"] != nil
		}, 10*time.Second, 50*time.Millisecond, "outbound call %d: %v", id, c)
		require.Equal(t, "callee_hangup", c["end_reason"], "outbound call %d: %v", id, c)
		// B reported the callee's answer: the call lasted from it.
		var start, answeredAt sql.NullInt64
		require.NoError(t, db.QueryRow(`SELECT start_time, answered_at FROM calls WHERE id = $1`, id).Scan(&start, &answeredAt))
		require.True(t, answeredAt.Valid, "outbound call %d: answer recorded", id)
		require.GreaterOrEqual(t, answeredAt.Int64, start.Int64)
	}
	require.Contains(t, kam.log.String(), "node sip:127.0.0.1:"+strconv.Itoa(ports[0])+" refused or timed out", "Kamailio failed over from the dead node")

	// B's long calls run to their own end. (A's callers' BYEs reach no
	// one: that sipp run hangs on to them until its timeout, and the
	// cleanup stops it.)
	for _, id := range append(slices.Clone(onB), newOnB...) {
		var c map[string]any
		require.Eventually(t, func() bool {
			_, c = api("GET", fmt.Sprintf("/v1/calls/%d", id), "")
			return c["status"] == "completed" && c["billed_at"] != nil
		}, 15*time.Second, 50*time.Millisecond, "call %d on B: %v", id, c)
		require.Equal(t, "caller_hangup", c["end_reason"], "call %d on B: %v", id, c)
	}

	// Node B dies and comes back at once under the same id, so it never
	// leaves the registry: its new life says so at start (node-start),
	// and the call its old one held ends with node_lost.
	bAnswered := len(answered(nodes[1]))
	calls(1, 1, 30*time.Second) // fails once B is gone; the cleanup stops it
	require.Eventually(t, func() bool { return len(answered(nodes[1])) == bAnswered+1 }, 10*time.Second, 20*time.Millisecond)
	held := answered(nodes[1])[bAnswered]
	time.Sleep(3 * time.Second)
	kills[1]()
	<-nodes[1].done
	restarted := time.Now()
	startMedia(1)
	nodes[1].waitLog(t, `media node serving" http_addr=(127\.0\.0\.1:\d+)`)
	require.True(t, registered(ids[1]))
	var hc map[string]any
	require.Eventually(t, func() bool {
		_, hc = api("GET", fmt.Sprintf("/v1/calls/%d", held), "")
		return hc["status"] == "completed" && hc["billed_at"] != nil
	}, 10*time.Second, 50*time.Millisecond, "the restarted node's earlier call ends: %v", hc)
	require.Equal(t, "node_lost", hc["end_reason"], "%v", hc)
	start, err := time.Parse(time.RFC3339Nano, hc["start_time"].(string))
	require.NoError(t, err)
	require.InDelta(t, restarted.Sub(start).Seconds(), hc["duration_seconds"].(float64), 2.5, "billed up to the old life's last heartbeat: %v", hc)
	require.True(t, registered(ids[1]), "the node was never out of the registry")
	t.Logf("node B killed and restarted under its id: its earlier call ended %v after the kill", time.Since(restarted).Round(time.Millisecond))

	// One ledger entry and one telephony.complete per call, whatever
	// reaped it.
	var ledger []map[string]any
	require.Equal(t, 200, apiCall(t, base, key, "GET", "/v1/billing/transactions?limit=500", nil, &ledger))
	refs := map[string]int{}
	for _, e := range ledger {
		if r, ok := e["reference"].(string); ok {
			refs[r]++
		}
	}
	all := append(append(append(slices.Clone(onA), onB...), newOnB...), append(outbound, held)...)
	// The outbound calls left ringing on B ended when B restarted (or at
	// the ring timeout): failed, not charged.
	for _, id := range ringing {
		if slices.Contains(ringingOnA, id) {
			continue
		}
		var c map[string]any
		require.Eventually(t, func() bool {
			_, c = api("GET", fmt.Sprintf("/v1/calls/%d", id), "")
			return c["status"] == "failed" && c["billed_at"] != nil
		}, 10*time.Second, 50*time.Millisecond, "outbound call %d ringing on B: %v", id, c)
		require.Zero(t, c["billing_total_cents"].(float64))
	}
	require.Eventually(t, func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		for _, id := range all {
			if len(completes[id]) == 0 {
				return false
			}
		}
		return true
	}, 15*time.Second, 50*time.Millisecond, "every call is reported")
	time.Sleep(2 * time.Second) // time for a duplicate to show
	hookMu.Lock()
	defer hookMu.Unlock()
	for _, id := range all {
		require.Equal(t, 1, refs["call:"+strconv.FormatInt(id, 10)], "call %d: one ledger entry", id)
		require.Len(t, completes[id], 1, "call %d: one telephony.complete", id)
	}
	for _, id := range ringing {
		require.Zero(t, refs["call:"+strconv.FormatInt(id, 10)], "call %d, never answered: no ledger entry", id)
		require.Len(t, completes[id], 1, "call %d: one telephony.complete", id)
	}
	for _, id := range onA {
		ev := completes[id][0].Data
		require.Equal(t, "node_lost", ev.EndReason)
		require.EqualValues(t, byID[id]["duration_seconds"], ev.DurationSeconds)
	}
	require.Len(t, completes, len(all)+len(ringing), "no other call was reported")
}
