package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/call"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// legacyHook is the org's legacy webhook as the Exchanger sees it.
type legacyHook struct{ url string }

func (h legacyHook) GetWebhook(context.Context, int64) (storage.Webhook, error) {
	return storage.Webhook{URL: h.url, Secret: "whsec_test"}, nil
}

// TestBrowserToolsUseTheWebToolExchange checks a browser call's tool runs
// (the node's tool chain) as the blocking web.tool exchange with the
// call's ids.
func TestBrowserToolsUseTheWebToolExchange(t *testing.T) {
	var got map[string]any
	var answer atomic.Value
	answer.Store(`{"output": {"slots": ["19:00"]}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		if r.Header.Get("X-Service-Signature") != webhook.Sign("whsec_test", b) {
			http.Error(w, "bad signature", 401)
			return
		}
		_, _ = w.Write([]byte(answer.Load().(string)))
	}))
	defer srv.Close()
	x := webhook.NewExchanger(legacyHook{srv.URL}, true, nil, nil)
	chain := call.NewChain(slog.New(slog.DiscardHandler), nil, call.WebhookTools{X: x})
	tools := chain.Resolve(call.Info{CallID: 42, OrgID: 7, AgentID: 9, Direction: "web", Channel: call.ChannelBrowser,
		Agent: control.AgentConfig{Tools: []control.Tool{{Type: "function", Name: "find_slot"}}}})
	out, err := tools.RunTool(context.Background(), llm.ToolCall{ID: "call_1", Name: "find_slot", Arguments: `{"party": 2}`})
	require.NoError(t, err)
	require.JSONEq(t, `{"slots": ["19:00"]}`, out)
	require.Equal(t, "web.tool", got["type"])
	data := got["data"].(map[string]any)
	require.Equal(t, float64(42), data["call_id"])
	require.Equal(t, float64(9), data["agent_id"])
	require.Equal(t, "find_slot", data["name"])
	require.Equal(t, "call_1", data["tool_call_id"])
	require.Equal(t, map[string]any{"party": float64(2)}, data["arguments"])

	// A receiver's error reaches the model as the tool's failure.
	answer.Store(`{"error": "no tables left"}`)
	_, err = tools.RunTool(context.Background(), llm.ToolCall{ID: "call_2", Name: "find_slot", Arguments: "not json"})
	require.ErrorContains(t, err, "no tables left")
}
