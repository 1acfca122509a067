package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/mediatest"
	"github.com/voiced/voiced/sip/siptest"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/coord/rediscoord"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// role is one voiced role run in-process (its own flags, context and
// logs), as it would run as its own process.
type role struct {
	cancel context.CancelFunc
	done   chan error
	stdout *syncBuf
	stderr *syncBuf
}

func startRole(t *testing.T, args ...string) *role {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &role{cancel: cancel, done: make(chan error, 1), stdout: &syncBuf{}, stderr: &syncBuf{}}
	t.Cleanup(cancel)
	go func() { r.done <- run(ctx, args, r.stdout, r.stderr) }()
	return r
}

// waitLog waits for re in the role's log and returns its first group.
func (r *role) waitLog(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if m := rx.FindStringSubmatch(r.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("role exited: %v\n%s", err, r.stderr.String())
		default:
		}
	}
	t.Fatalf("no %q in the log:\n%s", re, r.stderr.String())
	return ""
}

func (r *role) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		require.NoError(t, err, "log: %s", r.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("role did not stop:\n%s", r.stderr.String())
	}
}

// TestControlAndMediaRoles runs the scale-out shape on loopback: voiced
// control on PostgreSQL and Redis, and a voiced media node with no
// database that reaches it only through the internal API. A SIP call to
// the media node is admitted, recorded, finished and billed in
// PostgreSQL with its recording in the control plane's blob store; a
// realtime session on the media node authenticates with an API key and
// completes a turn; a wrong or missing cluster secret is refused; the
// node is in the registry while it runs and leaves it on shutdown.
func TestControlAndMediaRoles(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	dbURL, redisURL := sqltest.URL(t, migrations.Postgres), isolatedRedis(t)
	secret := strings.Repeat("c0ffee", 6)
	ctlDir, mediaDir := t.TempDir(), t.TempDir()

	ctl := startRole(t, "control", "--data-dir", ctlDir, "--database-url", dbURL, "--redis-url", redisURL,
		"--http-addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0", "--cluster-secret", secret)
	base := "http://" + ctl.waitLog(t, `http_addr=(127\.0\.0\.1:\d+)`)
	internal := "http://" + ctl.waitLog(t, `internal_addr=(127\.0\.0\.1:\d+)`)
	require.NotContains(t, ctl.stderr.String(), "telephony listening", "the control role has no SIP front door")
	key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(ctl.stdout.String())
	require.NotEmpty(t, key)
	api := func(method, path, body string) (int, map[string]any) {
		var out map[string]any
		st := apiCall(t, base, key, method, path, jsonBody(body), &out)
		return st, out
	}
	// The control role runs no realtime sessions itself: with no media
	// node yet, its socket answers 503.
	res, err := http.Get(base + "/v1/realtime")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 503, res.StatusCode)

	// With no media node, a realtime session is refused before anything
	// is admitted, and so is an outbound call.
	st, ag0 := api("POST", "/v1/agents", `{"name":"Early"}`)
	require.Equal(t, 201, st, "%v", ag0)
	st, body := api("POST", "/v1/realtime/sessions", fmt.Sprintf(`{"agent_id":%d}`, objID(ag0)))
	require.Equal(t, 503, st, "%v", body)
	require.Contains(t, body["detail"], "media node")
	_, list := api("GET", "/v1/calls", "")
	require.Empty(t, list["results"], "nothing admitted")

	// The internal API refuses a missing or wrong secret.
	for auth, want := range map[string]int{"": 401, "Bearer " + strings.Repeat("0", len(secret)): 403, "Bearer " + secret: 204} {
		req, _ := http.NewRequest("POST", internal+"/internal/v1/ping", strings.NewReader("{}"))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, want, res.StatusCode, "auth %q", auth)
	}
	// A media node with the wrong secret, or a database, does not start.
	bad := startRole(t, "media", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0",
		"--control-url", internal, "--cluster-secret", strings.Repeat("x", 32), "--redis-url", redisURL)
	select {
	case err := <-bad.done:
		require.ErrorContains(t, err, "cluster secret")
	case <-time.After(20 * time.Second):
		t.Fatal("a media node with the wrong secret kept running")
	}
	// Nor one on every interface with no --public-url: control could not
	// reach it.
	require.ErrorContains(t, run(context.Background(), []string{"media", "--data-dir", t.TempDir(), "--http-addr", "0.0.0.0:0", "--sip-addr", "127.0.0.1:0",
		"--webrtc-udp-addr", "127.0.0.1:0", "--control-url", internal, "--cluster-secret", secret, "--redis-url", redisURL}, io.Discard, io.Discard), "--public-url")
	require.ErrorContains(t, run(context.Background(), []string{"media", "--database-url", dbURL, "--control-url", internal, "--cluster-secret", secret,
		"--redis-url", redisURL}, io.Discard, io.Discard), "no database")

	// The node's transcription, at the provider boundary; its model is the
	// offline echo.
	files := speechFiles(t)
	sipPort := siptest.FreePort(t, "127.0.0.1")
	turn := mediatest.Coturn(t, 49610, 49800, "--use-auth-secret", "--static-auth-secret=roles-turn")
	nodeID := fmt.Sprintf("media-test-%d", time.Now().UnixNano())
	media := startRole(t, "media", "--data-dir", mediaDir, "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:"+strconv.Itoa(sipPort),
		"--rtp-ports", "43000-43499", "--webrtc-udp-addr", "127.0.0.1:0", "--call-loopback", "--stt-base-url", fakeTranscriber(t), "--stt-model", "gpt-4o-transcribe",
		"--control-url", internal, "--cluster-secret", secret, "--redis-url", redisURL, "--node-id", nodeID,
		"--webrtc-turn", turn, "--webrtc-turn-secret", "roles-turn", "--webrtc-turn-ttl", "10m")
	mediaBase := "http://" + media.waitLog(t, `media node serving" http_addr=(127\.0\.0\.1:\d+)`)
	require.Contains(t, media.stderr.String(), "telephony listening")

	// The node is in the registry, with its address.
	opt, err := redis.ParseURL(redisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	reg, err := rediscoord.New(rediscoord.Config{}, nil, rdb)
	require.NoError(t, err)
	defer reg.Close()
	node := func() (coord.Node, bool) {
		nodes, err := reg.Nodes(context.Background())
		require.NoError(t, err)
		i := slices.IndexFunc(nodes, func(n coord.Node) bool { return n.ID == nodeID })
		if i < 0 {
			return coord.Node{}, false
		}
		return nodes[i], true
	}
	n, ok := node()
	require.True(t, ok, "the media node registered")
	require.Equal(t, strings.TrimPrefix(mediaBase, "http://"), n.Addr)
	require.False(t, n.Draining)

	// A SIP call through the media node.
	st, conn := api("POST", "/v1/voip-connections", `{"host":"127.0.0.1","port":5999,"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU","PCMA"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := api("POST", "/v1/agents", `{"name":"Front desk"}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := api("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, num = api("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st, "%v", num)
	before := scrape(t, base)
	uac := siptest.Sipp(t, "../../sip/testdata/sipp/uac_call.xml", 20*time.Second, "-d", "1000", "-s", "+14155550100", "-m", "1", "127.0.0.1:"+strconv.Itoa(sipPort))
	require.NoError(t, uac.Wait())
	var in map[string]any
	require.Eventually(t, func() bool {
		_, list := api("GET", "/v1/calls?direction=inbound", "")
		rs, _ := list["results"].([]any)
		if len(rs) != 1 {
			return false
		}
		in = rs[0].(map[string]any)
		return in["status"] != "in_progress" && in["billed_at"] != nil
	}, 15*time.Second, 50*time.Millisecond, "media log: %s", media.stderr.String())
	require.Equal(t, "completed", in["status"], "%v", in)
	require.Equal(t, "caller_hangup", in["end_reason"])
	require.Greater(t, in["billing_total_cents"], 0.0, "billed: %v", in)
	require.NotNil(t, in["quality"], "the media node's figures reached the record")
	key0 := strings.TrimPrefix(in["recording_url"].(string), "blob://")
	fi, err := os.Stat(filepath.Join(ctlDir, "blobs", key0))
	require.NoError(t, err, "the recording is in the control plane's blob store")
	require.Greater(t, fi.Size(), int64(58+8000), "about a second of 8 kHz stereo µ-law")
	_, err = os.Stat(filepath.Join(mediaDir, "spool", key0))
	require.ErrorIs(t, err, os.ErrNotExist, "the media node keeps no recording")
	// The next heartbeat says so (one may have gone while the call ran).
	require.Eventually(t, func() bool { n, _ := node(); return n.Calls == 0 }, 3*time.Second, 50*time.Millisecond, "the call ended")
	// The node's media figures are on its own /metrics.
	mm := scrape(t, mediaBase)
	require.Greater(t, mm[`voiced_media_rtp_packets_total{direction="in",front_door="phone"}`], 10.0, "%v", mm)
	require.Greater(t, mm["voiced_media_pacer_ticks_total"], 0.0)
	// What the call cost the control plane in internal API requests
	// (docs/decisions.md, "Control and media roles").
	after := scrape(t, base)
	perCall := map[string]float64{}
	total := 0.0
	for k, v := range after {
		if strings.HasPrefix(k, "voiced_internal_api_requests_total{") {
			if d := v - before[k]; d > 0 {
				perCall[k] = d
				total += d
			}
		}
	}
	t.Logf("one SIP call through the media node: %v internal API requests: %v; %v recording bytes uploaded", total, perCall,
		after["voiced_internal_api_blob_bytes_total"]-before["voiced_internal_api_blob_bytes_total"])
	require.Positive(t, perCall[`voiced_internal_api_requests_total{code="2xx",method="admit"}`])
	require.Positive(t, perCall[`voiced_internal_api_requests_total{code="2xx",method="finish"}`])
	require.Positive(t, perCall[`voiced_internal_api_requests_total{code="2xx",method="blobs"}`])

	// Refusals come back through the internal API as the same errors, so
	// the node answers as serve does: an unknown number 404, a number
	// with no agent 480, each with its Reason header.
	st, idle := api("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550101","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", idle)
	for number, code := range map[string]int{"+14155550000": 404, "+14155550101": 480} {
		sc := siptest.Scenario(t, "../../sip/testdata/sipp/uac_refused.xml.tmpl", map[string]any{"Code": code, "Fmt": "0", "Map": "PCMU/8000"})
		require.NoError(t, siptest.Sipp(t, sc, 10*time.Second, "-s", number, "-m", "1", "127.0.0.1:"+strconv.Itoa(sipPort)).Wait(), "%s: %d", number, code)
	}

	// POST /v1/call on the control plane is placed on the media node,
	// which dials out through the trunk (sipp: 401, authenticated INVITE,
	// answer, the callee hangs up after a second).
	uas := siptest.Sipp(t, "../../sip/testdata/sipp/uas_auth.xml", 20*time.Second, "-m", "1")
	st, conn = api("PATCH", fmt.Sprintf("/v1/voip-connections/%d", objID(conn)), fmt.Sprintf(`{"port":%d,"username":"alice","password":"secret"}`, uas.Port))
	require.Equal(t, 200, st, "%v", conn)
	st, out := api("POST", "/v1/call", fmt.Sprintf(`{"agent_id":%d,"from_number":"+14155550100","to_number":"+14155550123"}`, objID(ag)))
	require.Equal(t, 201, st, "%v", out)
	require.NoError(t, uas.Wait(), "media log: %s", media.stderr.String())
	require.Eventually(t, func() bool {
		_, out = api("GET", fmt.Sprintf("/v1/calls/%d", int64(out["call_id"].(float64))), "")
		return out["status"] != "in_progress"
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "completed", out["status"], "%v", out)
	require.Equal(t, "callee_hangup", out["end_reason"])

	// verify-voip on the control plane: a node checks the trunk with
	// OPTIONS.
	opts := siptest.Sipp(t, "../../sip/testdata/sipp/uas_options.xml", 20*time.Second, "-m", "1")
	st, conn = api("PATCH", fmt.Sprintf("/v1/voip-connections/%d", objID(conn)), fmt.Sprintf(`{"port":%d}`, opts.Port))
	require.Equal(t, 200, st, "%v", conn)
	st, v := api("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", objID(num)), "")
	require.Equal(t, 200, st, "%v", v)
	require.Equal(t, "verified", v["voip_verification_status"], "%v", v)
	require.NoError(t, opts.Wait())

	// A realtime session on the media node, authenticated with the API
	// key through the control plane, completes a text turn; its
	// transcript reaches the call's record.
	st, rtAgent := api("POST", "/v1/agents", `{"name":"Concierge","voice":"espeak:en-us","prompt":"Greet.","inbound_speak_order":"user_first"}`)
	require.Equal(t, 201, st, "%v", rtAgent)
	sv := &served{base: mediaBase, key: key, stderr: media.stderr}
	id := realtimeTextTurn(t, sv, objID(rtAgent), "Hi there", nil)
	require.NotZero(t, id)
	requireEchoed(t, api, id, "Hi there")
	_, rc := api("GET", fmt.Sprintf("/v1/calls/%d", id), "")
	require.NotNil(t, rc["recording_url"], "%v", rc)
	_, err = os.Stat(filepath.Join(ctlDir, "blobs", strings.TrimPrefix(rc["recording_url"].(string), "blob://")))
	require.NoError(t, err, "the realtime session's recording is in the control plane's blob store")

	// A session started on the control plane is placed on the media
	// node: its media_url is the node's, where its token opens the call.
	var sess map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/realtime/sessions", map[string]any{"agent_id": objID(rtAgent)}, &sess), "%v", sess)
	require.Equal(t, strings.Replace(mediaBase, "http://", "ws://", 1)+"/v1/realtime", sess["media_url"])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(http.Header{"Authorization": {"Bearer " + sess["token"].(string)}})}
	nc, br, _, err := d.Dial(ctx, sess["media_url"].(string))
	require.NoError(t, err)
	var rd io.Reader = nc
	if br != nil {
		rd = io.MultiReader(br, nc)
	}
	placed := textTurn(t, sv, nc, struct {
		io.Reader
		io.Writer
	}{rd, nc}, "Hi again", nil)
	nc.Close()
	require.EqualValues(t, sess["call_id"], placed)

	// A socket that reaches the control plane (a client that knows only
	// the API's base URL) is passed to the media node.
	viaControl := realtimeTextTurn(t, &served{base: base, key: key, stderr: media.stderr}, objID(rtAgent), "Hi from afar", nil)
	requireEchoed(t, api, viaControl, "Hi from afar")
	// So do the published clients, given the control plane's URL: a
	// conversation in text and speech each.
	t.Run("clients", func(t *testing.T) {
		npmReady(t)
		t.Run("openai", func(t *testing.T) {
			t.Parallel()
			openaiClient(t, strings.TrimPrefix(base, "http://"), key, "pcm16", files["pcm16"])
		})
		t.Run("agents sdk", func(t *testing.T) {
			t.Parallel()
			agentsClient(t, strings.TrimPrefix(base, "http://"), key, files["pcm16"])
		})
	})

	// A wrong API key is refused on the media node as on serve.
	req, _ := http.NewRequest("GET", mediaBase+"/v1/realtime?agent_id=1", nil)
	req.Header.Set("Authorization", "Bearer sk_live_0000")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 401, res.StatusCode)

	// A widget call started on the control plane: the placement hands the
	// offer to the media node, whose WebRTC media the browser connects to;
	// the call is recorded and billed on the control plane.
	st, pk := api("POST", "/v1/publishable-key", fmt.Sprintf(`{"agent_id":%d,"allowed_domains":["localhost"]}`, objID(ag)))
	require.Equal(t, 201, st, "%v", pk)
	// The widget's ICE servers come from the node's TURN settings.
	var ice struct {
		Servers []struct {
			URLs     []string `json:"urls"`
			Username string   `json:"username"`
		} `json:"ice_servers"`
	}
	ireq, _ := http.NewRequest("GET", base+"/v1/widget/ice-servers?publishable_key="+pk["key"].(string), nil)
	ireq.Header.Set("Origin", "http://localhost")
	res, err = http.DefaultClient.Do(ireq)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&ice))
	res.Body.Close()
	require.Len(t, ice.Servers, 1, "%+v", ice)
	require.Equal(t, []string{turn}, ice.Servers[0].URLs)
	require.Regexp(t, `^[0-9]+:`+pk["key_prefix"].(string)+`$`, ice.Servers[0].Username)
	start := time.Now()
	web := pionWidgetCall(t, base, pk["key"].(string), func() bool { return time.Since(start) > 2*time.Second })
	var wc map[string]any
	require.Eventually(t, func() bool {
		_, wc = api("GET", fmt.Sprintf("/v1/calls/%d", web), "")
		return wc["status"] == "completed" && wc["billed_at"] != nil
	}, 15*time.Second, 50*time.Millisecond)
	require.NotNil(t, wc["recording_url"], "%v", wc)
	_, err = os.Stat(filepath.Join(ctlDir, "blobs", strings.TrimPrefix(wc["recording_url"].(string), "blob://")))
	require.NoError(t, err, "the widget call's recording is in the control plane's blob store")

	// The node's own internal endpoint wants the secret too.
	for auth, want := range map[string]int{"": 401, "Bearer " + strings.Repeat("0", len(secret)): 403, "Bearer " + secret: 400} {
		req, _ := http.NewRequest("POST", mediaBase+"/internal/v1/media/answer", strings.NewReader("{"))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, want, res.StatusCode, "auth %q", auth)
	}

	// The heartbeat carries the node's live calls: an open session shows
	// within a beat, and goes when it closes.
	hold, hrw := dialRealtimeAgent(t, ctx, mediaBase, key, objID(rtAgent))
	var ev struct {
		Type string `json:"type"`
	}
	for ev.Type != "session.updated" {
		nextRealtimeEvent(t, sv, hold, hrw, &ev)
	}
	require.Eventually(t, func() bool { n, _ := node(); return n.Calls == 1 }, 5*time.Second, 100*time.Millisecond)
	hold.Close()
	require.Eventually(t, func() bool { n, _ := node(); return n.Calls == 0 }, 5*time.Second, 100*time.Millisecond)

	// SIGTERM (the run context's end) with a phone call up: the node
	// leaves the registry and answers OPTIONS 503 at once, and the call
	// runs to its own end within --drain-timeout (30 s by default).
	endedBefore := callsEnded(media.stderr.String())
	up := siptest.Sipp(t, "../../sip/testdata/sipp/uac_call.xml", 20*time.Second, "-d", "2500", "-s", "+14155550100", "-m", "1", "127.0.0.1:"+strconv.Itoa(sipPort))
	require.Eventually(t, func() bool { n, _ := node(); return n.Calls == 1 }, 5*time.Second, 50*time.Millisecond)
	media.cancel()
	require.Eventually(t, func() bool { _, ok := node(); return !ok }, 3*time.Second, 20*time.Millisecond, "the media node left the registry")
	require.Equal(t, 503, sipOptions(t, "127.0.0.1:"+strconv.Itoa(sipPort)), "a draining node answers OPTIONS 503")
	require.NoError(t, up.Wait(), "the call in progress runs to its end")
	media.stop(t)
	endedAfter := callsEnded(media.stderr.String())
	require.Len(t, endedAfter, len(endedBefore)+1)
	for id, reason := range endedAfter {
		if _, ok := endedBefore[id]; !ok {
			require.Equal(t, "caller_hangup", reason, "call %d: not cut by the drain", id)
		}
	}
	ctl.stop(t)
}

// jsonBody is a raw JSON request body for apiCall (nil when empty).
func jsonBody(s string) any {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// requireEchoed waits for call id to be completed and billed with the
// echo model's answer to text in its transcript.
func requireEchoed(t *testing.T, api func(method, path, body string) (int, map[string]any), id int64, text string) {
	t.Helper()
	var c map[string]any
	require.Eventually(t, func() bool {
		_, c = api("GET", fmt.Sprintf("/v1/calls/%d", id), "")
		return c["status"] == "completed" && c["billed_at"] != nil
	}, 15*time.Second, 50*time.Millisecond, "%v", c)
	_, h := api("GET", fmt.Sprintf("/v1/calls/%d/history", id), "")
	var roles []string
	for _, it := range h["items"].([]any) {
		if m := it.(map[string]any); m["text"] == text {
			roles = append(roles, fmt.Sprint(m["role"]))
		}
	}
	require.Contains(t, roles, "user", "%v", h)
	require.Contains(t, roles, "assistant", "the node's agent answered: %v", h)
}

// TestRoleFlags: each role takes its own flags, refuses the others' and
// names what is missing in one line.
func TestRoleFlags(t *testing.T) {
	secret := strings.Repeat("s", 32)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"control"}, "--cluster-secret"},
		{[]string{"control", "--cluster-secret", "short"}, "--cluster-secret"},
		{[]string{"control", "--cluster-secret", secret}, "--redis-url"},
		{[]string{"control", "--sip-addr", "127.0.0.1:5060"}, "sip-addr"},
		{[]string{"control", "--internal-addr", "nowhere"}, "--internal-addr"},
		{[]string{"control", "--internal-tls-cert", "c.pem"}, "--internal-tls-key"},
		{[]string{"media", "--database-url", "postgres://u@h/db"}, "no database"},
		{[]string{"media"}, "--control-url"},
		{[]string{"media", "--control-url", "ftp://x"}, "--control-url"},
		{[]string{"media", "--stripe-api-key", "sk_test_x"}, "stripe-api-key"},
		{[]string{"serve", "--cluster-secret", secret}, "cluster-secret"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(context.Background(), append(tc.args, "--data-dir", t.TempDir()), io.Discard, io.Discard)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	help := func(cmd string) string {
		var out strings.Builder
		require.ErrorIs(t, run(context.Background(), []string{cmd, "--help"}, &out, io.Discard), flag.ErrHelp)
		return out.String()
	}
	ctl, media, serve := help("control"), help("media"), help("serve")
	for _, f := range []string{"-cluster-secret", "-internal-addr", "-database-url", "-redis-url", "-stripe-api-key"} {
		require.Contains(t, ctl, f)
	}
	for _, f := range []string{"-sip-addr", "-rtp-ports", "-webrtc-udp-addr", "-control-url"} {
		require.NotContains(t, ctl, f)
		require.Contains(t, media, f)
	}
	// Calls talk to the model on media nodes; the grading judge on control.
	require.Contains(t, ctl, "-llm-base-url")
	require.Contains(t, media, "-llm-base-url")
	for _, f := range []string{"-stripe-api-key", "-did-pool", "-internal-addr"} {
		require.NotContains(t, media, f)
	}
	require.NotContains(t, serve, "-cluster-secret")
	var usage strings.Builder
	require.NoError(t, run(context.Background(), []string{"--help"}, &usage, io.Discard))
	require.Contains(t, usage.String(), "voiced control")
	require.Contains(t, usage.String(), "voiced media")
}

// isolatedRedis is the test Redis on a database of its own (1-15, at
// random): the control role places calls on every node registered there,
// so nodes of tests running at the same time must not be among them.
func isolatedRedis(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(testRedisURL(t))
	require.NoError(t, err)
	u.Path = "/" + strconv.Itoa(1+rand.IntN(15))
	return u.String()
}
