package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/sip/siptest"
)

// scriptedModel is the one model of the server (--llm-base-url): the
// simulated caller, the agent and the grading judge all ask it, and it
// answers by the prompt: the caller's frame gets the caller's lines, the
// judge's rubric a grade, anything else (the agent) a host's answer.
func scriptedModel(t *testing.T) string {
	return scriptedModelBy(t, func(body string) string {
		switch {
		case strings.Contains(body, "role-playing a caller") && strings.Contains(body, "Hello, I would like"):
			return "Thank you, goodbye. [END]"
		case strings.Contains(body, "role-playing a caller"):
			return "Hello, I would like a table for two tonight."
		case strings.Contains(body, "You grade one finished phone call"):
			return `{"call_outcome":"success","score":90,"outcome_reasoning":"Booked.","summary":"A table was booked.","rubric_breakdown":{"task_completion":9,"accuracy":9,"instruction_following":9,"conversation_flow":9,"tone":9},"detected_issues":[]}`
		default:
			return "Certainly, a table for two at seven."
		}
	})
}

// scriptedModelBy is an OpenAI-compatible chat server that streams
// reply(request body) as the answer.
func scriptedModelBy(t *testing.T, reply func(body string) string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d, _ := json.Marshal(reply(string(b)))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", d)
		_, _ = io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// scriptedSTT is a speech-to-text server at the provider boundary
// (--stt-base-url): speech is the caller's line, silence nothing.
func scriptedSTT(t *testing.T) string {
	// Speech-to-text is a fake at the provider boundary too (offline
	// PocketSphinx on a shared 2-core machine can take longer than the
	// caller waits): speech is the caller's line, silence nothing.
	return fakeSTT(t, func(pcm []int16) string {
		if media.DBFS(pcm) < -45 {
			return ""
		}
		return "Hello, I would like a table for two tonight."
	})
}

// fakeSTT serves the OpenAI transcription API, the provider boundary of
// --stt-base-url, answering each request with transcribe of its audio,
// and returns its base URL (ending in /v1) for the test's life.
func fakeSTT(t *testing.T, transcribe func(pcm []int16) string) string {
	stt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" || r.ParseMultipartForm(10<<20) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, "no file", 400)
			return
		}
		_, pcm, _ := wav.ReadAll(f)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text": %q}`, transcribe(pcm))
	}))
	t.Cleanup(stt.Close)
	return stt.URL + "/v1"
}

// startSimulationServe starts a telephony node whose model is
// scriptedModel and whose speech-to-text is a fake at the provider
// boundary, with an agent ringing from a VoIP number: the harness of the
// simulation tests. It returns the node, the agent and the number.
func startSimulationServe(t *testing.T) (*served, map[string]any, map[string]any) {
	return startSimulationServeWith(t, scriptedModel(t))
}

// startSimulationServeWith is startSimulationServe with the model at
// modelURL.
func startSimulationServeWith(t *testing.T, modelURL string) (*served, map[string]any, map[string]any) {
	sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", modelURL, "--llm-model", "scripted", "--stt-base-url", scriptedSTT(t))
	st, conn := sv.call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := sv.call("POST", "/v1/agents", `{"name":"Host","first_message":"Welcome to the shop.","voice":"espeak:en-us"}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := sv.call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, _ = sv.call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st)
	return sv, ag, num
}

// TestSimulationRunsMakeRealCalls: POST /v1/simulations against a phone
// number and against an agent; the worker makes each call for real
// (call/sim over SIP/RTP to the node, and over the realtime WebSocket),
// and the run takes its call_id, transcript, recording_url, duration,
// grade and charge from that call; test-call.completed reaches a webhook
// endpoint for each.
func TestSimulationRunsMakeRealCalls(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	var mu sync.Mutex
	var hooks []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		hooks = append(hooks, m)
		mu.Unlock()
	}))
	defer hook.Close()
	sv, ag, num := startSimulationServe(t)
	st, ep := sv.call("POST", "/v1/developer/webhook-endpoints", fmt.Sprintf(`{"label":"sims","url":%q,"events":["test-call.completed"]}`, hook.URL))
	require.Equal(t, 201, st, "%v", ep) // ep: the endpoint
	_, acct := sv.call("GET", "/v1/billing", "")
	t.Logf("balance before: %v", acct["balance_cents"])

	st, sip := sv.call("POST", "/v1/simulations", fmt.Sprintf(`{"target_type":"phone_number","target_id":%d,"scenario_prompt":"You want a table for two tonight.","consent_to_charge":true}`, objID(num)))
	require.Equal(t, 201, st, "%v", sip)
	require.Equal(t, "sip", sip["mode"])
	st, web := sv.call("POST", "/v1/test-calls", fmt.Sprintf(`{"target_type":"agent","target_id":%d,"scenario_prompt":"You want a table for two tonight.","language":"en-gb","consent_to_charge":true}`, objID(ag)))
	require.Equal(t, 201, st, "%v", web)
	require.Equal(t, "bot", web["mode"])

	done := func(id any) map[string]any {
		var run map[string]any
		require.Eventually(t, func() bool {
			req, _ := http.NewRequest("GET", sv.base+"/v1/simulations", nil)
			req.Header.Set("Authorization", "Bearer "+sv.key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer res.Body.Close()
			var runs []map[string]any
			_ = json.NewDecoder(res.Body).Decode(&runs)
			for _, r := range runs {
				if r["id"] == id && (r["status"] == "completed" || r["status"] == "failed") && r["grade"] != nil {
					run = r
					return true
				}
			}
			return false
		}, 90*time.Second, 250*time.Millisecond)
		return run
	}
	for _, tc := range []struct {
		name string
		run  map[string]any
	}{{"telephony", sip}, {"web", web}} {
		run := done(tc.run["id"])
		t.Logf("%s run: status %v, call %v, %v s, charged %v, metadata %v", tc.name, run["status"], run["call_id"], run["duration_seconds"], run["charged_cents"], run["metadata"])
		require.Equal(t, "completed", run["status"], "%v", run)
		require.NotNil(t, run["call_id"])
		require.Greater(t, run["duration_seconds"].(float64), 0.0)
		require.Contains(t, run["recording_url"], "/recording?expires=")
		tr := run["transcript"].([]any)
		var said []string
		for _, it := range tr {
			m := it.(map[string]any)
			said = append(said, m["role"].(string)+": "+m["content"].(string))
		}
		t.Logf("%s transcript: %v", tc.name, said)
		require.Contains(t, said, "assistant: Welcome to the shop.")
		require.Contains(t, said, "assistant: Certainly, a table for two at seven.", "the agent answered the simulated caller")
		require.Equal(t, "completed", run["grade"].(map[string]any)["status"])
		_, c := sv.call("GET", fmt.Sprintf("/v1/calls/%v", run["call_id"]), "")
		require.Equal(t, true, c["is_simulation"], "%v", c)
		require.Equal(t, c["duration_seconds"], run["duration_seconds"])
		require.Equal(t, c["billing_total_cents"], run["charged_cents"], "testing bills the caller side at 1x the call")
		meta := run["metadata"].(map[string]any)
		require.Equal(t, tc.name, meta["channel"])
		require.NotNil(t, meta["caller_voice"])
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hooks) >= 2
	}, 60*time.Second, 100*time.Millisecond, "test-call.completed delivered for both runs")
	mu.Lock()
	for _, h := range hooks {
		require.Equal(t, "test-call.completed", h["type"])
	}
	mu.Unlock()
	sv.stop(t)
}

// TestTestRunExecuteMakesRealCalls: POST /v1/agents/{id}/test-runs/execute
// with one scenario x 2 audio conditions (none; street at 5 dB) over
// telephony. The worker makes two real SIP calls to the agent, each with
// its condition applied by the simulated caller (measured: the level of
// what it sent between its words), and when both have ended and been
// graded the test run has its verdicts and the scenario its latest one.
func TestTestRunExecuteMakesRealCalls(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	sv, ag, num := startSimulationServe(t)
	st, sc := sv.call("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", objID(ag)),
		`{"title":"Book a table","scenario_prompt":"You want a table for two tonight.","speech_style":{"accent":"en-GB"}}`)
	require.Equal(t, 201, st, "%v", sc)
	st, tr := sv.call("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", objID(ag)), fmt.Sprintf(`{"channel":"telephony","phone_number_id":%d,
		"matrix":{"audio_conditions":[{"noise_asset":"none"},{"noise_asset":"street","snr_db":5}]},"stagger_seconds":1,"consent_to_charge":true}`, objID(num)))
	require.Equal(t, 201, st, "%v", tr)
	require.Equal(t, "in_progress", tr["status"])
	require.Equal(t, float64(2), tr["total_count"])

	var done map[string]any
	require.Eventually(t, func() bool {
		_, done = sv.call("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", objID(ag), objID(tr)), "")
		return done["status"] == "completed"
	}, 150*time.Second, 500*time.Millisecond, "the test run ends")
	t.Logf("test run: %v", done)
	items := done["runs"].([]any)
	require.Len(t, items, 2)
	calls := map[any]bool{}
	for i, it := range items {
		item := it.(map[string]any)
		var sim map[string]any
		for _, r := range listOf(t, sv, "/v1/simulations?limit=10") {
			if r["id"] == item["simulation_id"] {
				sim = r
			}
		}
		require.NotNil(t, sim, "run %d is a simulation run", i)
		t.Logf("run %d: status %v, call %v, metadata %v", i, sim["status"], sim["call_id"], sim["metadata"])
		require.Equal(t, "completed", sim["status"], "%v", sim)
		require.Equal(t, "sip", sim["mode"])
		require.NotNil(t, sim["call_id"])
		require.Equal(t, sim["call_id"], item["call_id"])
		calls[sim["call_id"]] = true
		_, c := sv.call("GET", fmt.Sprintf("/v1/calls/%v", sim["call_id"]), "")
		require.Equal(t, true, c["is_simulation"], "%v", c)
		require.Greater(t, c["duration_seconds"].(float64), 0.0)
		meta := sim["metadata"].(map[string]any)
		require.Equal(t, "telephony", meta["channel"])
		require.Contains(t, fmt.Sprint(meta["caller_voice"]), "en-GB", "the scenario's accent")
		lvl := meta["caller_pause_dbfs"].(float64)
		caller := item["caller"].(map[string]any)
		if i == 0 {
			require.Equal(t, "none", caller["noise_asset"])
			require.Nil(t, meta["caller_noise_asset"])
			require.Less(t, lvl, -75.0, "no noise: the caller is (nearly) silent between its words")
		} else {
			require.Equal(t, "street", caller["noise_asset"])
			require.Equal(t, float64(5), caller["snr_db"])
			require.Equal(t, "street", meta["caller_noise_asset"])
			require.Equal(t, float64(5), meta["caller_snr_db"])
			require.Greater(t, lvl, -60.0, "street noise fills the caller's pauses")
		}
		// The scripted judge grades every call a success: each run passes.
		require.Equal(t, "pass", item["verdict"], "%v", item)
		require.Equal(t, "success", item["call_outcome"])
	}
	require.Len(t, calls, 2, "two distinct real calls")
	require.Equal(t, "pass", done["verdict"])
	require.Equal(t, float64(2), done["pass_count"])
	require.Equal(t, float64(0), done["fail_count"])
	require.Equal(t, 1.0, done["pass_rate"])
	require.NotNil(t, done["completed_at"])
	_, sc = sv.call("GET", fmt.Sprintf("/v1/agents/%d/test-scenarios/%d", objID(ag), objID(sc)), "")
	require.Equal(t, "pass", sc["latest_verdict"])
	sv.stop(t)
}

// listOf GETs path, a JSON array of objects.
func listOf(t *testing.T, sv *served, path string) []map[string]any {
	req, _ := http.NewRequest("GET", sv.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+sv.key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	var out []map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out
}
