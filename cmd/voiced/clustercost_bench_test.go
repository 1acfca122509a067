package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for the statistics views
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
)

// costSnap is what the control plane has done so far: CPU of the
// control and media processes, Redis commands by name (INFO
// commandstats), rows written by table and commits in the cluster's
// database (pg_stat_user_tables, pg_stat_database), internal API requests
// by method (the control replicas' /metrics).
type costSnap struct {
	at                time.Time
	ctlCPU, mediaCPU  time.Duration
	redis             map[string]float64
	rows              map[string]float64
	commits           float64
	internal          map[string]float64
	internalTotal     float64
	callsEndedOnNodes int
}

// pidCPU is a process's user and system CPU time (/proc/<pid>/stat; the
// kernel counts in USER_HZ, 100 on Linux).
func pidCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(t, err)
	st, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(t, err)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

var internalMethod = regexp.MustCompile(`method="([^"]+)"`)

func takeCostSnap(t testing.TB, s clusterStatus, rdb *redis.Client, db *sql.DB) costSnap {
	t.Helper()
	c := costSnap{at: time.Now(), redis: map[string]float64{}, rows: map[string]float64{}, internal: map[string]float64{}}
	for _, n := range s.Nodes {
		switch n.Role {
		case "control":
			c.ctlCPU += pidCPU(t, n.PID)
			for k, v := range scrape(t, n.APIURL) {
				if m := internalMethod.FindStringSubmatch(k); m != nil && strings.HasPrefix(k, "voiced_internal_api_requests_total{") {
					c.internal[m[1]] += v
					c.internalTotal += v
				}
			}
		case "media":
			c.mediaCPU += pidCPU(t, n.PID)
			c.callsEndedOnNodes += len(callsEnded(readLog(t, n.Log)))
		}
	}
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, err := strconv.ParseFloat(calls, 64)
		require.NoError(t, err, line)
		if name = strings.TrimPrefix(name, "cmdstat_"); name != "info" { // ours
			c.redis[name] = v
		}
	}
	rows, err := db.Query(`SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		var n float64
		require.NoError(t, rows.Scan(&name, &n))
		c.rows[name] = n
	}
	require.NoError(t, rows.Err())
	rows.Close()
	require.NoError(t, db.QueryRow(`SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&c.commits))
	return c
}

func sumMap(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// deltas is after - before by key, zeros dropped, largest first.
func deltas(before, after map[string]float64, per float64) string {
	type kv struct {
		k string
		v float64
	}
	var out []kv
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out = append(out, kv{k, d / per})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].v > out[j].v })
	var b strings.Builder
	for i, e := range out {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.2f", e.k, e.v)
	}
	return b.String()
}

// BenchmarkClusterCost measures what one call costs the control plane of
// the local cluster (deploy/local-cluster.sh: two control replicas, two
// media nodes, Kamailio, PostgreSQL and a Redis of its own): internal API
// requests, Redis commands and database rows written per call, control
// CPU per 1,000 calls, and media CPU per call-second, from an idle window
// (the fleet's fixed cost: heartbeats, leases, workers) and a load window
// of sipp calls through Kamailio (PCMU with speech RTP, the media nodes'
// loopback agent), net of the idle rate; then the same for outbound calls
// (POST /v1/call through a trunk) and realtime sessions through a control
// replica. make bench runs it:
//
//	VOICED_COST_CALLS=300 VOICED_COST_HOLD=5s VOICED_COST_OUTBOUND=100 VOICED_COST_REALTIME=50 go test -run '^$' -bench ClusterCost -benchtime 1x ./cmd/voiced/
func BenchmarkClusterCost(b *testing.B) {
	calls, hold, rate, outbound, sessions := 300, 5*time.Second, 20, 100, 50
	if v := os.Getenv("VOICED_COST_REALTIME"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "VOICED_COST_REALTIME")
		sessions = n
	}
	if v := os.Getenv("VOICED_COST_OUTBOUND"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "VOICED_COST_OUTBOUND")
		outbound = n
	}
	if v := os.Getenv("VOICED_COST_CALLS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "VOICED_COST_CALLS")
		calls = n
	}
	if v := os.Getenv("VOICED_COST_HOLD"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(b, err, "VOICED_COST_HOLD")
		hold = d
	}
	pcap := speechPcap(b)
	c := newLocalCluster(b, "--call-loopback")
	s := c.up(b)
	connID, agentID := loopbackNumber(b, s.APIURL, s.APIKey, clusterAgent)
	opt, err := redis.ParseURL(s.RedisURL)
	require.NoError(b, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	db, err := sql.Open("pgx", s.DatabaseURL)
	require.NoError(b, err)
	defer db.Close()

	sipp := func(n int) *siptest.Proc {
		sc := siptest.Scenario(b, "../../sip/testdata/sipp/uac_proxied_load.xml.tmpl", struct{ Proxy, Pcap string }{s.SIPAddr, pcap})
		return siptest.Sipp(b, sc, time.Duration(n/rate)*time.Second+hold+60*time.Second, "-s", "+14155550100", "-m", strconv.Itoa(n),
			"-r", strconv.Itoa(rate), "-l", strconv.Itoa(n), "-d", strconv.Itoa(int(hold.Milliseconds())), s.SIPAddr)
	}
	// PostgreSQL's backends report their counts when idle, within 10 s.
	const statsFlush = 11 * time.Second
	waitEnded := func(want int) {
		require.Eventually(b, func() bool {
			n := 0
			for _, node := range s.Nodes {
				if node.Role == "media" {
					n += len(callsEnded(readLog(b, node.Log)))
				}
			}
			return n >= want
		}, 60*time.Second, 100*time.Millisecond)
	}
	// Warm-up: connections, caches, the first call's lazy setup.
	require.NoError(b, sipp(10).Wait())
	waitEnded(10)
	time.Sleep(statsFlush)

	b.ResetTimer()
	s0 := takeCostSnap(b, s, rdb, db)
	time.Sleep(20 * time.Second)
	s1 := takeCostSnap(b, s, rdb, db)
	idle := s1.at.Sub(s0.at).Seconds()
	require.NoError(b, sipp(calls).Wait(), "every call completes")
	waitEnded(s1.callsEndedOnNodes + calls)
	time.Sleep(statsFlush)
	s2 := takeCostSnap(b, s, rdb, db)
	b.StopTimer()
	load := s2.at.Sub(s1.at).Seconds()

	// The calls as the control plane recorded them.
	var callSeconds float64
	var n int
	for off := 0; ; off += 100 {
		var list map[string]any
		require.Equal(b, 200, apiCall(b, s.APIURL, s.APIKey, "GET", fmt.Sprintf("/v1/calls?direction=inbound&limit=100&offset=%d", off), nil, &list))
		rs, _ := list["results"].([]any)
		for _, r := range rs {
			cl := r.(map[string]any)
			require.Equal(b, "completed", cl["status"], "%v", cl)
			require.NotNil(b, cl["billed_at"], "%v", cl)
			callSeconds += cl["duration_seconds"].(float64)
			n++
		}
		if len(rs) < 100 {
			break
		}
	}
	require.Equal(b, 10+calls, n)
	require.Equal(b, float64(calls), s2.internal["finish"]-s1.internal["finish"], "one finish per call")

	N := float64(calls)
	net := func(loadDelta, idleDelta float64) float64 { return (loadDelta - idleDelta/idle*load) / N }
	idleRedis, loadRedis := sumMap(s1.redis)-sumMap(s0.redis), sumMap(s2.redis)-sumMap(s1.redis)
	idleRows, loadRows := sumMap(s1.rows)-sumMap(s0.rows), sumMap(s2.rows)-sumMap(s1.rows)
	ctlIdle, ctlLoad := (s1.ctlCPU - s0.ctlCPU).Seconds(), (s2.ctlCPU - s1.ctlCPU).Seconds()
	mediaIdle, mediaLoad := (s1.mediaCPU - s0.mediaCPU).Seconds(), (s2.mediaCPU - s1.mediaCPU).Seconds()
	// Media CPU over the calls' own seconds (10 warm-up calls excluded by
	// the window; their seconds are small next to the load's).
	mediaPerCallSecond := (mediaLoad - mediaIdle/idle*load) / callSeconds

	b.ReportMetric(net(s2.internalTotal-s1.internalTotal, s1.internalTotal-s0.internalTotal), "internal-req/call")
	b.ReportMetric(net(loadRedis, idleRedis), "redis-ops/call")
	b.ReportMetric(net(loadRows, idleRows), "db-rows/call")
	b.ReportMetric(net(s2.commits-s1.commits, s1.commits-s0.commits), "db-commits/call")
	b.ReportMetric(1000*net(ctlLoad, ctlIdle), "control-cpu-s/1000calls")
	b.ReportMetric(1000*mediaPerCallSecond, "media-cpu-ms/call-s")
	b.Logf("idle %.1f s: control CPU %.3f s, media CPU %.3f s, Redis %.1f ops/s (%s), DB rows %.2f/s, commits %.2f/s, internal API %.2f req/s (%s)",
		idle, ctlIdle, mediaIdle, idleRedis/idle, deltas(s0.redis, s1.redis, idle), idleRows/idle, (s1.commits-s0.commits)/idle,
		(s1.internalTotal-s0.internalTotal)/idle, deltas(s0.internal, s1.internal, idle))
	b.Logf("load %.1f s: %d calls at %d/s held %v through Kamailio, %.0f call-seconds; control CPU %.3f s, media CPU %.3f s",
		load, calls, rate, hold, callSeconds, ctlLoad, mediaLoad)
	b.Logf("per call (gross): internal API %s; Redis %s; DB rows %s; commits %.2f",
		deltas(s1.internal, s2.internal, N), deltas(s1.redis, s2.redis, N), deltas(s1.rows, s2.rows, N), (s2.commits-s1.commits)/N)
	b.Logf("per call (net of idle): internal API %.2f requests, Redis %.2f ops, DB %.2f rows written in %.2f commits, control CPU %.1f ms (%.2f s per 1,000 calls); media CPU %.2f ms per call-second (%.1f%% of a core per call)",
		net(s2.internalTotal-s1.internalTotal, s1.internalTotal-s0.internalTotal), net(loadRedis, idleRedis), net(loadRows, idleRows),
		net(s2.commits-s1.commits, s1.commits-s0.commits), 1000*net(ctlLoad, ctlIdle), 1000*net(ctlLoad, ctlIdle), 1000*mediaPerCallSecond, 100*mediaPerCallSecond)

	// Outbound: POST /v1/call on the control plane, placed on a media node
	// (coord placement, a sealed dial command), dialled through a trunk
	// that challenges for credentials; the callee hangs up after 1 s.
	uas := siptest.Sipp(b, "../../sip/testdata/sipp/uas_auth.xml", time.Duration(outbound)*time.Second/5+60*time.Second, "-m", strconv.Itoa(outbound))
	var cn map[string]any
	require.Equal(b, 200, apiCall(b, s.APIURL, s.APIKey, "PATCH", fmt.Sprintf("/v1/voip-connections/%d", connID),
		map[string]any{"port": uas.Port, "username": "alice", "password": "secret"}, &cn), "%v", cn)
	time.Sleep(statsFlush)
	b.StartTimer()
	s3 := takeCostSnap(b, s, rdb, db)
	for i := 0; i < outbound; i++ {
		var out map[string]any
		require.Equal(b, 201, apiCall(b, s.APIURL, s.APIKey, "POST", "/v1/call",
			map[string]any{"agent_id": agentID, "from_number": "+14155550100", "to_number": "+14155550123"}, &out), "%v", out)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(b, uas.Wait(), "every outbound call answered and hung up by the callee")
	waitEnded(s3.callsEndedOnNodes + outbound)
	time.Sleep(statsFlush)
	s4 := takeCostSnap(b, s, rdb, db)
	b.StopTimer()
	outLoad := s4.at.Sub(s3.at).Seconds()
	O := float64(outbound)
	onet := func(loadDelta, idleDelta float64) float64 { return (loadDelta - idleDelta/idle*outLoad) / O }
	b.Logf("outbound %.1f s: %d POST /v1/call at 10/s; per call (gross): internal API %s; Redis %s; DB rows %s",
		outLoad, outbound, deltas(s3.internal, s4.internal, O), deltas(s3.redis, s4.redis, O), deltas(s3.rows, s4.rows, O))
	b.Logf("outbound per call (net of idle): internal API %.2f requests, Redis %.2f ops, DB %.2f rows written in %.2f transactions, control CPU %.1f ms (the POST included)",
		onet(s4.internalTotal-s3.internalTotal, s1.internalTotal-s0.internalTotal), onet(sumMap(s4.redis)-sumMap(s3.redis), idleRedis),
		onet(sumMap(s4.rows)-sumMap(s3.rows), idleRows), onet(s4.commits-s3.commits, s1.commits-s0.commits),
		1000*onet((s4.ctlCPU-s3.ctlCPU).Seconds(), ctlIdle))
	b.ReportMetric(onet(sumMap(s4.redis)-sumMap(s3.redis), idleRedis), "redis-ops/outbound-call")
	b.ReportMetric(onet(sumMap(s4.rows)-sumMap(s3.rows), idleRows), "db-rows/outbound-call")
	b.ReportMetric(1000*onet((s4.ctlCPU-s3.ctlCPU).Seconds(), ctlIdle), "control-cpu-s/1000outbound")

	// Realtime sessions: a WebSocket that reaches the second control
	// replica (passed on to a node the placement picks), one text turn
	// answered by the echo model, closed; one after the other.
	time.Sleep(statsFlush)
	b.StartTimer()
	s5 := takeCostSnap(b, s, rdb, db)
	sv := &served{base: s.node("control-2").APIURL, key: s.APIKey, stderr: &syncBuf{}}
	for i := 0; i < sessions; i++ {
		require.NotZero(b, realtimeTextTurn(b, sv, agentID, "Hello there", nil))
	}
	require.Eventually(b, func() bool {
		n := 0.0
		for _, node := range s.Nodes {
			if node.Role == "control" {
				for k, v := range scrape(b, node.APIURL) {
					if strings.HasPrefix(k, "voiced_internal_api_requests_total{") && strings.Contains(k, `method="finish"`) {
						n += v
					}
				}
			}
		}
		return n >= s5.internal["finish"]+float64(sessions)
	}, 30*time.Second, 500*time.Millisecond, "every session finished")
	time.Sleep(statsFlush)
	s6 := takeCostSnap(b, s, rdb, db)
	b.StopTimer()
	rtLoad := s6.at.Sub(s5.at).Seconds()
	R := float64(sessions)
	rnet := func(loadDelta, idleDelta float64) float64 { return (loadDelta - idleDelta/idle*rtLoad) / R }
	b.Logf("realtime %.1f s: %d sessions through control-2; per session (gross): internal API %s; Redis %s; DB rows %s",
		rtLoad, sessions, deltas(s5.internal, s6.internal, R), deltas(s5.redis, s6.redis, R), deltas(s5.rows, s6.rows, R))
	b.Logf("realtime per session (net of idle): internal API %.2f requests, Redis %.2f ops, DB %.2f rows written in %.2f transactions, control CPU %.1f ms (the proxied socket included), media CPU %.1f ms",
		rnet(s6.internalTotal-s5.internalTotal, s1.internalTotal-s0.internalTotal), rnet(sumMap(s6.redis)-sumMap(s5.redis), idleRedis),
		rnet(sumMap(s6.rows)-sumMap(s5.rows), idleRows), rnet(s6.commits-s5.commits, s1.commits-s0.commits),
		1000*rnet((s6.ctlCPU-s5.ctlCPU).Seconds(), ctlIdle), 1000*rnet((s6.mediaCPU-s5.mediaCPU).Seconds(), mediaIdle))
	b.ReportMetric(rnet(sumMap(s6.redis)-sumMap(s5.redis), idleRedis), "redis-ops/session")
	b.ReportMetric(rnet(sumMap(s6.rows)-sumMap(s5.rows), idleRows), "db-rows/session")
	b.ReportMetric(1000*rnet((s6.ctlCPU-s5.ctlCPU).Seconds(), ctlIdle), "control-cpu-s/1000sessions")
}
