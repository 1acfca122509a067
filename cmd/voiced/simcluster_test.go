package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestSimulationsOnControl: voiced control (PostgreSQL, Redis, no SIP)
// and one voiced media process. Simulation runs created through the
// control API (telephony to a number, web to an agent, and inbound: the
// agent calls the caller) are each made for real by the simulated caller
// of the media node the placement picks: the node holds the run's call,
// and the run gets its call_id, transcript, recording, duration and
// grade from it.
func TestSimulationsOnControl(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	dbURL, redisURL := sqltest.URL(t, migrations.Postgres), isolatedRedis(t)
	secret := strings.Repeat("5eed", 12)
	model, stt := scriptedModel(t), scriptedSTT(t)

	ctl, _ := startProcess(t, "control", "--data-dir", t.TempDir(), "--database-url", dbURL, "--redis-url", redisURL,
		"--http-addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0", "--cluster-secret", secret, "--access-log=false",
		"--dev-credit-cents", "100000000", "--llm-base-url", model, "--llm-model", "scripted")
	base := "http://" + ctl.waitLog(t, `http_addr=(127\.0\.0\.1:\d+)`)
	internal := "http://" + ctl.waitLog(t, `internal_addr=(127\.0\.0\.1:\d+)`)
	var key string
	require.Eventually(t, func() bool {
		key = regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(ctl.stdout.String())
		return key != ""
	}, 10*time.Second, 20*time.Millisecond)
	api := func(method, path, body string) (int, map[string]any) {
		var out map[string]any
		st := apiCall(t, base, key, method, path, jsonBody(body), &out)
		return st, out
	}
	list := func() []map[string]any {
		var out []map[string]any
		require.Equal(t, 200, apiCall(t, base, key, "GET", "/v1/simulations?limit=10", nil, &out))
		return out
	}

	// Before any media node: no simulated caller anywhere, a 502.
	_, agentID := loopbackNumber(t, base, key, `{"name":"Host","first_message":"Welcome to the shop.","voice":"espeak:en-us"}`)
	st, early := api("POST", "/v1/simulations", fmt.Sprintf(`{"target_type":"agent","target_id":%d,"consent_to_charge":true}`, agentID))
	require.Equal(t, 502, st, "%v", early)
	require.Contains(t, early["detail"], "no media node is live")

	nodeID := fmt.Sprintf("sim-%d", time.Now().UnixNano())
	media, _ := startProcess(t, "media", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0",
		"--sip-addr", "127.0.0.1:"+strconv.Itoa(siptest.FreePort(t, "127.0.0.1")), "--rtp-ports", "46000-46499", "--webrtc-udp-addr", "127.0.0.1:0",
		"--call-loopback=false", "--sip-trusted", "127.0.0.1", "--control-url", internal, "--cluster-secret", secret, "--redis-url", redisURL,
		"--node-id", nodeID, "--llm-base-url", model, "--llm-model", "scripted", "--stt-base-url", stt)
	media.waitLog(t, `media node serving" http_addr=(127\.0\.0\.1:\d+)`)

	var nums []map[string]any
	require.Equal(t, 200, apiCall(t, base, key, "GET", "/v1/phone-numbers", nil, &nums))
	require.Len(t, nums, 1)
	numID := objID(nums[0])
	runs := map[string]float64{}
	for name, body := range map[string]string{
		"telephony": fmt.Sprintf(`{"target_type":"phone_number","target_id":%d,"scenario_prompt":"You want a table for two tonight.","consent_to_charge":true}`, numID),
		"web":       fmt.Sprintf(`{"target_type":"agent","target_id":%d,"scenario_prompt":"You want a table for two tonight.","consent_to_charge":true}`, agentID),
		"inbound":   fmt.Sprintf(`{"target_type":"phone_number","target_id":%d,"direction":"inbound","scenario_prompt":"You want a table for two tonight.","consent_to_charge":true}`, numID),
	} {
		st, run := api("POST", "/v1/simulations", body)
		require.Equal(t, 201, st, "%s: %v", name, run)
		runs[name] = run["id"].(float64)
	}
	done := map[string]map[string]any{}
	require.Eventually(t, func() bool {
		for _, r := range list() {
			for name, id := range runs {
				if r["id"] == id && (r["status"] == "completed" || r["status"] == "failed") && r["grade"] != nil {
					done[name] = r
				}
			}
		}
		return len(done) == len(runs)
	}, 150*time.Second, 500*time.Millisecond, "every run ends and is graded")

	for name, r := range done {
		t.Logf("%s run: status %v, call %v, %v s, error %q, metadata %v", name, r["status"], r["call_id"], r["duration_seconds"], r["error_message"], r["metadata"])
		require.Equal(t, "completed", r["status"], "%s: %v", name, r)
		require.Greater(t, r["duration_seconds"].(float64), 0.0)
		require.Equal(t, "completed", r["grade"].(map[string]any)["status"])
		var said []string
		for _, it := range r["transcript"].([]any) {
			m := it.(map[string]any)
			said = append(said, m["role"].(string)+": "+m["content"].(string))
		}
		t.Logf("%s transcript: %v", name, said)
		require.Contains(t, said, "assistant: Certainly, a table for two at seven.", "%s: the agent answered the simulated caller", name)
		// The recording is there: the signed link serves the call's audio.
		res, err := http.Get(r["recording_url"].(string))
		require.NoError(t, err)
		audio, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode, "%s: %s", name, audio)
		require.Greater(t, len(audio), 8000, "%s: a recording of seconds of audio", name)
		st, c := api("GET", fmt.Sprintf("/v1/calls/%v", r["call_id"]), "")
		require.Equal(t, 200, st)
		require.Equal(t, true, c["is_simulation"], "%s: %v", name, c)
		require.Equal(t, "completed", c["status"])
		want := map[string]string{"telephony": "inbound", "web": "web", "inbound": "outbound"}[name]
		require.Equal(t, want, c["direction"], "%s", name)
	}
	// The media node made the calls: its log names each of them.
	for name, r := range done {
		require.Contains(t, media.stderr.String(), fmt.Sprintf("call_id=%v", r["call_id"]), "%s: the call ran on the media node", name)
	}
}
