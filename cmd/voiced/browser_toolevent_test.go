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
)

// TestBrowserToolEvent: a widget call whose agent calls a tool as it
// greets. The tool runs through the legacy web.tool exchange, and a
// webhook endpoint subscribed to web.tool receives one event for the run
// with the call, the agent, the tool's name, arguments and result and
// its times; an endpoint subscribed to other types gets none.
func TestBrowserToolEvent(t *testing.T) {
	chromiumPath(t)
	wavPath := speechWAV(t)
	model := chainModel(t) // calls book_table, then answers: no transfer_call on a browser call

	type got struct {
		path string
		body map[string]any
	}
	var mu sync.Mutex
	var reqs []got
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		reqs = append(reqs, got{r.URL.Path, body})
		mu.Unlock()
		if r.URL.Path == "/legacy" && body["type"] == "web.tool" {
			_, _ = w.Write([]byte(`{"output": {"booked": true, "time": "19:00"}}`))
		}
	}))
	defer hooks.Close()
	base, key := liveServe(t, "--call-loopback=false", "--llm-base-url", model.URL+"/v1")

	require.Equal(t, 200, apiCall(t, base, key, "PUT", "/v1/webhook", map[string]any{"url": hooks.URL + "/legacy"}, nil))
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/developer/webhook-endpoints",
		map[string]any{"label": "tools", "url": hooks.URL + "/tools", "events": []string{"web.tool"}}, nil))
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/developer/webhook-endpoints",
		map[string]any{"label": "ends", "url": hooks.URL + "/ends", "events": []string{"web.complete"}}, nil))
	var ag map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/agents", map[string]any{"name": "Host", "voice": "espeak:en-us",
		"prompt": "Book tables.", "inbound_speak_order": "agent_first",
		"tools": []map[string]any{{"type": "function", "name": "book_table", "description": "Book a table.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"party": map[string]any{"type": "integer"}}}}}}, &ag))
	var pk map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/publishable-key", map[string]any{"agent_id": ag["id"], "allowed_domains": []string{"shop.example"}}, &pk))
	ch := startChromium(t, wavPath)
	widgetCall(t, ch, base, pk["key"].(string), "")
	var state string
	var callID int64
	ch.eval(`voicedWidget.callId`, &callID)

	toolEvents := func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		var out []map[string]any
		for _, r := range reqs {
			if r.path == "/tools" {
				out = append(out, r.body)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(toolEvents()) > 0 }, 20*time.Second, 100*time.Millisecond, "no web.tool delivery")
	ev := toolEvents()[0]
	require.Equal(t, "web.tool", ev["type"])
	require.NotEmpty(t, ev["event_id"])
	data := ev["data"].(map[string]any)
	require.Equal(t, float64(callID), data["call_id"])
	require.Equal(t, ag["id"], data["agent_id"])
	require.Equal(t, "book_table", data["name"])
	require.Equal(t, map[string]any{"party": float64(2)}, data["arguments"])
	require.JSONEq(t, `{"booked": true, "time": "19:00"}`, data["output"].(string), "the result the model got")
	require.Nil(t, data["error"])
	start, err := time.Parse(time.RFC3339Nano, data["started_at"].(string))
	require.NoError(t, err)
	end, err := time.Parse(time.RFC3339Nano, data["ended_at"].(string))
	require.NoError(t, err)
	require.False(t, end.Before(start))
	require.WithinDuration(t, time.Now(), end, time.Minute)

	ch.eval(`voicedWidget.hangup(); voicedWidget.state`, &state)
	var call map[string]any
	require.Eventually(t, func() bool {
		apiCall(t, base, key, "GET", fmt.Sprintf("/v1/calls/%d", callID), nil, &call)
		return call["billed_at"] != nil
	}, 15*time.Second, 100*time.Millisecond)
	// The other endpoint got the completion and nothing of the tool.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range reqs {
			if r.path == "/ends" && r.body["type"] == "web.complete" {
				return true
			}
		}
		return false
	}, 15*time.Second, 100*time.Millisecond)
	require.Len(t, toolEvents(), 1, "one event per tool call")
	mu.Lock()
	defer mu.Unlock()
	for _, r := range reqs {
		require.False(t, r.path == "/ends" && r.body["type"] == "web.tool", "web.tool reached an endpoint not subscribed to it")
	}
}

// widgetCall serves a page embedding the widget with key (and the script
// tag's extra attributes attrs), opens it in ch as a localhost page,
// starts a call and waits until it is connected.
func widgetCall(t *testing.T, ch *chromium, base, key, attrs string) {
	t.Helper()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><script src="%s/widget.js" data-key="%s" %s></script></body></html>`, base, key, attrs)
	}))
	t.Cleanup(page.Close)
	ch.navigate(strings.Replace(page.URL, "127.0.0.1", "localhost", 1) + "/")
	ch.eval(`voicedWidget.start(); true`, nil)
	var state, detail string
	require.Eventually(t, func() bool {
		ch.eval(`voicedWidget.state`, &state)
		return state == "connected" || state == "error"
	}, 20*time.Second, 50*time.Millisecond)
	ch.eval(`voicedWidget.detail`, &detail)
	require.Equal(t, "connected", state, detail)
}
