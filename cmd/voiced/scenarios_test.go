package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeWritesScenariosWithItsModel checks the wiring: serve's
// --llm-base-url is the model that writes test scenarios (a scripted
// OpenAI-compatible server on loopback), and the agent's prompt reaches it.
func TestServeWritesScenariosWithItsModel(t *testing.T) {
	var mu sync.Mutex
	var prompts []string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		prompts = append(prompts, req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
		reply, _ := json.Marshal(`{"scenarios": [{"title": "Late booking", "scenario_prompt": "Ask for a table at 23:30.", "audio_conditions": {"noise_asset": "cafe", "snr_db": 10}}]}`)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", reply)
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer model.Close()
	base, key := liveServe(t, "--llm-base-url", model.URL+"/v1")
	var ag map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/agents", map[string]any{"name": "Host", "prompt": "Book tables until 23:00."}, &ag))
	var out struct{ Scenarios []map[string]any }
	require.Equal(t, 201, apiCall(t, base, key, "POST", fmt.Sprintf("/v1/agents/%v/test-scenarios/generate", ag["id"]), map[string]any{"count": 1}, &out))
	require.Len(t, out.Scenarios, 1)
	require.Equal(t, "Late booking", out.Scenarios[0]["title"])
	require.Equal(t, "ai", out.Scenarios[0]["source"])
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, prompts, 1)
	require.True(t, strings.Contains(prompts[0], "Book tables until 23:00."), prompts[0])
}
