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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		var reply string
		switch {
		case strings.Contains(body, "role-playing a caller") && strings.Contains(body, "Hello, I would like"):
			reply = "Thank you, goodbye. [END]"
		case strings.Contains(body, "role-playing a caller"):
			reply = "Hello, I would like a table for two tonight."
		case strings.Contains(body, "You grade one finished phone call"):
			reply = `{"call_outcome":"success","score":90,"outcome_reasoning":"Booked.","summary":"A table was booked.","rubric_breakdown":{"task_completion":9,"accuracy":9,"instruction_following":9,"conversation_flow":9,"tone":9},"detected_issues":[]}`
		default:
			reply = "Certainly, a table for two at seven."
		}
		d, _ := json.Marshal(reply)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", d)
		_, _ = io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
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
	// Speech-to-text is a fake at the provider boundary too (offline
	// PocketSphinx on a shared 2-core machine can take longer than the
	// caller waits): speech is the caller's line, silence nothing.
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
		text := "Hello, I would like a table for two tonight."
		if media.DBFS(pcm) < -45 {
			text = ""
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text": %q}`, text)
	}))
	defer stt.Close()
	sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", scriptedModel(t), "--llm-model", "scripted", "--stt-base-url", stt.URL+"/v1")
	st, conn := sv.call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := sv.call("POST", "/v1/agents", `{"name":"Host","first_message":"Welcome to the shop.","voice":"espeak:en-us"}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := sv.call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, _ = sv.call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st)
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
