package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	gosip "github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestKamailioDispatch runs deploy/kamailio/kamailio.cfg (Debian's
// kamailio, dispatcher module) in front of two voiced serve nodes that
// share PostgreSQL and Redis, and drives it with sipp:
//   - 40 calls through Kamailio spread over both nodes (each >= 30%); the
//     200 OK carries Kamailio's Record-Route, and each caller's ACK and
//     BYE, sent only to Kamailio with the route set, reach the node that
//     answered: every call completes on exactly one node with
//     caller_hangup and a 200 to its BYE;
//   - SIGTERM (the run context's end) on node B with calls in progress:
//     B answers OPTIONS 503, and once Kamailio has probed it no new INVITE
//     goes to B; B's calls that end before --drain-timeout end normally,
//     none is cut before it, the rest end with node_shutdown (a BYE that
//     reaches the caller through Kamailio) after it, billed, each with
//     its telephony.complete webhook;
//   - a new INVITE that a node refuses with 503 (draining) or does not
//     answer fails over to the next node.
func TestKamailioDispatch(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	kamBin := siptest.Binary(t, "kamailio", "kamailio")
	dbURL, redisURL := sqltest.URL(t, migrations.Postgres), isolatedRedis(t)
	const drain = 4 * time.Second
	secretKey := strings.Repeat("ab", 32)

	// Every webhook delivery, from whichever node delivers it.
	var hookMu sync.Mutex
	completes := map[int64]int{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				CallID int64 `json:"call_id"`
			} `json:"data"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &ev) == nil && ev.Type == "telephony.complete" {
			hookMu.Lock()
			completes[ev.Data.CallID]++
			hookMu.Unlock()
		}
		w.WriteHeader(204)
	}))
	defer hook.Close()

	ports := [2]int{siptest.FreePort(t, "127.0.0.1"), siptest.FreePort(t, "127.0.0.1")}
	startNode := func(i int, rtp string) *role {
		return startRole(t, "serve", "--data-dir", t.TempDir(), "--database-url", dbURL, "--redis-url", redisURL, "--secret-key", secretKey,
			"--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:"+strconv.Itoa(ports[i]), "--rtp-ports", rtp,
			"--webrtc-udp-addr", "127.0.0.1:0", "--call-loopback", "--sip-trusted", "127.0.0.1", "--access-log=false",
			"--dev-credit-cents", "100000000", "--drain-timeout", drain.String())
	}
	// A first, so that it alone bootstraps the shared database.
	a := startNode(0, "44000-44499")
	base := "http://" + a.waitLog(t, `http_addr=(127\.0\.0\.1:\d+)`)
	key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(a.stdout.String())
	require.NotEmpty(t, key)
	b := startNode(1, "44500-44999")
	b.waitLog(t, `http_addr=(127\.0\.0\.1:\d+)`)
	nodes := [2]*role{a, b}
	api := func(method, path, body string) (int, map[string]any) {
		var out map[string]any
		st := apiCall(t, base, key, method, path, jsonBody(body), &out)
		return st, out
	}
	loopbackNumber(t, base, key, `{"name":"Loopback"}`)
	st, wh := api("PUT", "/v1/webhook", fmt.Sprintf(`{"url":%q}`, hook.URL+"/hook"))
	require.Equal(t, 200, st, "%v", wh)

	// Both nodes answer OPTIONS 200 while they take calls.
	for _, p := range ports {
		require.Equal(t, 200, sipOptions(t, "127.0.0.1:"+strconv.Itoa(p)))
	}

	kam := startKamailio(t, kamBin, ports[:])
	proxy := kam.addr

	// 40 calls through Kamailio, each held 1 s.
	calls := func(n, rate int, hold time.Duration) *siptest.Proc {
		sc := siptest.Scenario(t, "../../sip/testdata/sipp/uac_proxied.xml.tmpl", struct {
			Proxy  string
			HoldMs int64
		}{proxy, hold.Milliseconds()})
		return siptest.Sipp(t, sc, time.Duration(n/rate)*time.Second+hold+30*time.Second, "-s", "+14155550100",
			"-m", strconv.Itoa(n), "-r", strconv.Itoa(rate), "-l", strconv.Itoa(n), proxy)
	}
	require.NoError(t, calls(40, 20, time.Second).Wait(), "sipp: every call through Kamailio completes, its BYE answered 200")
	ended := func() [2]map[int64]string {
		var out [2]map[int64]string
		for i, n := range nodes {
			out[i] = callsEnded(n.stderr.String())
		}
		return out
	}
	var byNode [2]map[int64]string
	require.Eventually(t, func() bool {
		byNode = ended()
		return len(byNode[0])+len(byNode[1]) == 40
	}, 10*time.Second, 50*time.Millisecond, "both nodes record their calls' ends")
	for i, m := range byNode {
		require.GreaterOrEqual(t, len(m), 12, "node %d took at least 30%% of the calls", i)
		for id, reason := range m {
			require.Equal(t, "caller_hangup", reason, "call %d on node %d: the caller's BYE reached it", id, i)
			_, other := byNode[1-i][id]
			require.False(t, other, "call %d ended on one node only", id)
		}
	}
	t.Logf("40 calls through Kamailio: node A %d, node B %d", len(byNode[0]), len(byNode[1]))

	// Drain: long calls (up to 30 s, unless the node hangs up) and short
	// ones (2 s, less than the drain timeout) on both nodes.
	// One run after the other, so round-robin gives each node some of
	// both.
	answered := func(n *role) int { return strings.Count(n.stderr.String(), `msg="call answered"`) }
	// waitAnswered waits for want answers in all; a failure says what
	// each node answered and warned about (Kamailio's log follows it).
	waitAnswered := func(want int) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			na, nb := answered(a), answered(b)
			if na+nb == want {
				return
			}
			if na+nb > want || time.Now().After(end) {
				t.Fatalf("calls answered: A %d, B %d, want %d in all\nnode A's warnings:\n%s\nnode B's warnings:\n%s",
					na, nb, want, warnings(a.stderr.String()), warnings(b.stderr.String()))
			}
		}
	}
	long := calls(6, 20, 30*time.Second)
	waitAnswered(46)
	short := calls(6, 20, 2*time.Second)
	waitAnswered(52)
	liveOnB := answered(b) - len(byNode[1])
	require.Positive(t, liveOnB, "node B has calls in progress")
	// A second Kamailio that has not probed yet (one probe an hour) and
	// lists B first: the INVITEs it sends B while B drains get 503 and
	// fail over to A.
	kam503 := startKamailio(t, kamBin, []int{ports[1], ports[0]}, "DS_PING_INTERVAL=3600")
	sigterm := time.Now()
	b.cancel() // what SIGTERM does to run's context (main's signal.NotifyContext)
	require.Eventually(t, func() bool { return sipOptions(t, "127.0.0.1:"+strconv.Itoa(ports[1])) == 503 }, 2*time.Second, 20*time.Millisecond,
		"a draining node answers OPTIONS 503")
	proxy = kam503.addr
	require.NoError(t, calls(4, 10, 500*time.Millisecond).Wait(), "calls refused by the draining node complete on the other")
	require.Contains(t, kam503.log.String(), "node sip:127.0.0.1:"+strconv.Itoa(ports[1])+" refused or timed out (503)")
	proxy = kam.addr
	// Kamailio probes every second and skips a node on its first failed
	// probe: after two intervals, new calls go to A alone.
	time.Sleep(2200 * time.Millisecond)
	mark := len(kam.log.String())
	require.NoError(t, calls(10, 20, 500*time.Millisecond).Wait(), "new calls complete while B drains")
	routed := kam.log.String()[mark:]
	require.Equal(t, 10, strings.Count(routed, "to sip:127.0.0.1:"+strconv.Itoa(ports[0])), "Kamailio log:\n%s", routed)
	require.NotContains(t, routed, "to sip:127.0.0.1:"+strconv.Itoa(ports[1]), "no new INVITE reaches the draining node")

	select {
	case err := <-b.done:
		require.NoError(t, err)
	case <-time.After(drain + 15*time.Second):
		t.Fatalf("node B did not stop:\n%s", b.stderr.String())
	}
	stopped := time.Now()
	require.GreaterOrEqual(t, stopped.Sub(sigterm), drain, "B waited for --drain-timeout with calls up")
	// B's calls: the short ones ended on their own before the deadline,
	// the long ones with node_shutdown after it.
	bEnds := callEndTimes(b.stderr.String())
	var cut, own int
	for id, reason := range callsEnded(b.stderr.String()) {
		if _, before := byNode[1][id]; before {
			continue
		}
		switch reason {
		case "node_shutdown":
			cut++
			require.False(t, bEnds[id].Before(sigterm.Add(drain)), "call %d cut at %v, before the drain deadline", id, bEnds[id].Sub(sigterm))
		case "caller_hangup":
			own++
		default:
			t.Fatalf("call %d on B ended with %s", id, reason)
		}
	}
	require.Equal(t, liveOnB, cut+own, "every call B held ended and was recorded")
	require.Positive(t, cut, "B had long calls to end at the deadline")
	require.Positive(t, own, "B had short calls that ended on their own while draining")
	t.Logf("node B drained in %v (--drain-timeout %v): %d calls ended on their own, %d with node_shutdown", stopped.Sub(sigterm).Round(time.Millisecond), drain, own, cut)

	// Failover: a second Kamailio that does not probe in time (one probe
	// an hour) lists B, now gone, first. The INVITEs it sends B get no
	// answer in INVITE_TIMEOUT and go on to A; every call completes.
	kam2 := startKamailio(t, kamBin, []int{ports[1], ports[0]}, "DS_PING_INTERVAL=3600")
	proxy = kam2.addr
	require.NoError(t, calls(4, 10, 500*time.Millisecond).Wait(), "calls fail over from the dead node")
	require.Contains(t, kam2.log.String(), "node sip:127.0.0.1:"+strconv.Itoa(ports[1])+" refused or timed out")
	proxy = kam.addr

	// Stop A too; its long calls end the same way, and every caller got
	// its BYE through Kamailio and answered it.
	a.stop(t)
	require.NoError(t, short.Wait())
	require.NoError(t, long.Wait(), "each long call got the node's BYE through Kamailio")

	// Billed and reported: every call of the run is completed in the
	// shared database with its charge, and got one telephony.complete
	// (webhook delivery runs on a node: restart A to deliver what is left).
	a2 := startNode(0, "44000-44499")
	base = "http://" + a2.waitLog(t, `http_addr=(127\.0\.0\.1:\d+)`)
	all := map[int64]map[string]any{}
	for off := 0; ; off += 100 {
		_, list := api("GET", fmt.Sprintf("/v1/calls?direction=inbound&limit=100&offset=%d", off), "")
		rs, _ := list["results"].([]any)
		for _, r := range rs {
			c := r.(map[string]any)
			all[int64(c["call_id"].(float64))] = c
		}
		if len(rs) < 100 {
			break
		}
	}
	require.Len(t, all, 70)
	shutdowns := 0
	for id, c := range all {
		require.Equal(t, "completed", c["status"], "call %d: %v", id, c)
		require.NotNil(t, c["billed_at"], "call %d billed: %v", id, c)
		if c["end_reason"] == "node_shutdown" {
			shutdowns++
		}
	}
	require.Equal(t, 6, shutdowns, "the six long calls ended at their nodes' shutdown")
	require.Eventually(t, func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		return len(completes) == 70
		// A delivery the drained node had leased when it stopped is sent
		// by the other node once the lease (timeout + 30 s) runs out.
	}, 60*time.Second, 100*time.Millisecond, "one telephony.complete per call")
	hookMu.Lock()
	for id, n := range completes {
		require.Equal(t, 1, n, "call %d reported once", id)
	}
	hookMu.Unlock()
	a2.stop(t)
}

var endedRe = regexp.MustCompile(`time=(\S+) .*msg="call ended".* call_id=(\d+) .*reason=(\S+)`)

// callsEnded is every call a node's log says ended, with its reason.
func callsEnded(log string) map[int64]string {
	out := map[int64]string{}
	for _, m := range endedRe.FindAllStringSubmatch(log, -1) {
		id, _ := strconv.ParseInt(m[2], 10, 64)
		out[id] = m[3]
	}
	return out
}

// callEndTimes is when each call ended, by the node's log.
func callEndTimes(log string) map[int64]time.Time {
	out := map[int64]time.Time{}
	for _, m := range endedRe.FindAllStringSubmatch(log, -1) {
		id, _ := strconv.ParseInt(m[2], 10, 64)
		at, _ := time.Parse(time.RFC3339Nano, m[1])
		out[id] = at
	}
	return out
}

// kamailio is a running Kamailio with the deploy config.
type kamailio struct {
	addr string
	log  *syncBuf
}

// startKamailio runs deploy/kamailio/kamailio.cfg on a free loopback
// port with a dispatcher list of the nodes' SIP ports (made by
// deploy/kamailio/dispatcher-list.sh), probing every second, until the
// test ends.
func startKamailio(t *testing.T, bin string, nodes []int, defines ...string) *kamailio {
	t.Helper()
	dir := t.TempDir()
	var addrs []string
	for _, p := range nodes {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	list, err := exec.Command("../../deploy/kamailio/dispatcher-list.sh", addrs...).Output()
	require.NoError(t, err)
	dsFile := filepath.Join(dir, "dispatcher.list")
	require.NoError(t, os.WriteFile(dsFile, list, 0o644))
	port := siptest.FreePort(t, "127.0.0.1")
	k := &kamailio{addr: "127.0.0.1:" + strconv.Itoa(port), log: &syncBuf{}}
	cmd := exec.Command(bin, "-DD", "-E", "-f", "../../deploy/kamailio/kamailio.cfg", "-Y", dir, "-P", filepath.Join(dir, "kamailio.pid"),
		"-w", dir, "-m", "32", "-M", "4")
	// A define given twice is an error: defines replace the test's own.
	set := map[string]string{"LISTEN": "udp:" + k.addr, "DS_LIST": `"` + dsFile + `"`, "DS_PING_INTERVAL": "1",
		"DS_PROBING_THRESHOLD": "1", "DS_INACTIVE_THRESHOLD": "1", "INVITE_TIMEOUT": "1000"}
	for _, d := range defines {
		name, v, _ := strings.Cut(d, "=")
		set[name] = v
	}
	for name, v := range set {
		cmd.Args = append(cmd.Args, "-A", name+"="+v)
	}
	cmd.Stdout, cmd.Stderr = k.log, k.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("kamailio log:\n%s", k.log.String())
		}
	})
	require.Eventually(t, func() bool { return sipOptions(t, k.addr) == 200 }, 10*time.Second, 100*time.Millisecond,
		"Kamailio answers OPTIONS: %s", k.log.String())
	return k
}

// warnings returns the WARN and ERROR lines of a node's log.
func warnings(log string) string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// sipOptions sends one OPTIONS over UDP to addr and returns the status
// of its answer (0: none within 500 ms).
func sipOptions(t *testing.T, addr string) int {
	t.Helper()
	c, err := net.Dial("udp", addr)
	require.NoError(t, err)
	defer c.Close()
	local := c.LocalAddr().String()
	msg := "OPTIONS sip:" + addr + " SIP/2.0\r\nVia: SIP/2.0/UDP " + local + ";branch=z9hG4bK" + strconv.FormatInt(time.Now().UnixNano(), 36) +
		"\r\nFrom: <sip:probe@" + local + ">;tag=p1\r\nTo: <sip:" + addr + ">\r\nCall-ID: probe-" + strconv.FormatInt(time.Now().UnixNano(), 36) +
		"\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	_, err = c.Write([]byte(msg))
	require.NoError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return 0
		}
		var code int
		if _, err := fmt.Sscanf(string(buf[:n]), "SIP/2.0 %d", &code); err == nil && code >= 200 {
			return code
		}
	}
}

// TestKamailioDispatchSlowBye: only a new INVITE is held to
// INVITE_TIMEOUT. Behind Kamailio, a node that answers a caller's BYE
// late (2 s: past INVITE_TIMEOUT, 1 s here, and inside FR_TIMEOUT, 5 s)
// still gets its 200 to the caller, not a 408 of Kamailio's own. The node is a sipgo user agent
// standing in for a media node slowed down by load (voiced answers a BYE
// at once when it has the CPU). With tm's fr_timer at INVITE_TIMEOUT, the
// configuration before (-A FR_TIMEOUT=1000 here), the caller gets 408
// and the test fails.
func TestKamailioDispatchSlowBye(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	kamBin := siptest.Binary(t, "kamailio", "kamailio")
	const late = 2 * time.Second
	node := startSlowNode(t, late)
	kam := startKamailio(t, kamBin, []int{node.port})
	sc := siptest.Scenario(t, "../../sip/testdata/sipp/uac_proxied.xml.tmpl", struct {
		Proxy  string
		HoldMs int64
	}{kam.addr, 300})
	start := time.Now()
	require.NoError(t, siptest.Sipp(t, sc, 30*time.Second, "-s", "+14155550100", "-m", "2", "-r", "10", "-l", "2", kam.addr).Wait(),
		"each caller gets the node's late 200 to its BYE through Kamailio")
	took := time.Since(start)
	require.EqualValues(t, 2, node.byes.Load(), "the node got each BYE once (Kamailio's retransmissions absorbed)")
	require.GreaterOrEqual(t, took, late, "the BYEs were answered late")
	require.NotContains(t, kam.log.String(), "refused or timed out", "no failover: the INVITEs were answered in time")
	t.Logf("two calls whose BYE the node answered %v late: done in %v", late, took.Round(time.Millisecond))
}

// slowNode is a SIP user agent that answers INVITEs at once (with SDP,
// copying Kamailio's Record-Route) and BYEs late.
type slowNode struct {
	port int
	byes atomic.Int32
}

// startSlowNode serves a slowNode on a free loopback UDP port until the
// test ends; it answers each BYE after late.
func startSlowNode(t *testing.T, late time.Duration) *slowNode {
	t.Helper()
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("slow-node"))
	require.NoError(t, err)
	srv, err := sipgo.NewServer(ua)
	require.NoError(t, err)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	n := &slowNode{port: pc.LocalAddr().(*net.UDPAddr).Port}
	contact := gosip.ContactHeader{Address: gosip.Uri{Scheme: "sip", User: "node", Host: "127.0.0.1", Port: n.port}}
	srv.OnInvite(func(req *gosip.Request, tx gosip.ServerTransaction) {
		sdp := "v=0\r\no=node 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
		res := gosip.NewResponseFromRequest(req, 200, "OK", []byte(sdp))
		res.AppendHeader(contact.Clone())
		res.AppendHeader(gosip.NewHeader("Content-Type", "application/sdp"))
		_ = tx.Respond(res)
	})
	srv.OnAck(func(*gosip.Request, gosip.ServerTransaction) {})
	srv.OnOptions(func(req *gosip.Request, tx gosip.ServerTransaction) {
		_ = tx.Respond(gosip.NewResponseFromRequest(req, 200, "OK", nil))
	})
	srv.OnBye(func(req *gosip.Request, tx gosip.ServerTransaction) {
		n.byes.Add(1)
		time.Sleep(late)
		_ = tx.Respond(gosip.NewResponseFromRequest(req, 200, "OK", nil))
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeUDP(pc)
	}()
	t.Cleanup(func() {
		pc.Close()
		<-done
		ua.Close()
	})
	return n
}
