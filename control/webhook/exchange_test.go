package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestExchanger(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, sqltest.New(t, "sqlite"), nil)
	org := newOrg(t, s)
	x := webhook.NewExchanger(s.Webhooks, true, nil, nil)

	_, err := x.Incoming(ctx, org, webhook.IncomingRequest{CallID: 1})
	require.ErrorIs(t, err, webhook.ErrNoLegacyWebhook)

	// The handler's state is set by the test between exchanges.
	var mu sync.Mutex
	var answerFn func(w http.ResponseWriter, body map[string]any)
	var seen []map[string]any
	var secret string
	setAnswer := func(f func(w http.ResponseWriter, body map[string]any)) { mu.Lock(); answerFn = f; mu.Unlock() }
	lastSeen := func() map[string]any { mu.Lock(); defer mu.Unlock(); return seen[len(seen)-1] }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		answer, key := answerFn, secret
		mu.Unlock()
		if r.Header.Get("X-Service-Signature") != webhook.Sign(key, raw) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		seen = append(seen, body)
		mu.Unlock()
		answer(w, body)
	}))
	defer srv.Close()
	wh, err := s.Webhooks.SetWebhook(ctx, org, srv.URL, false)
	require.NoError(t, err)
	mu.Lock()
	secret = wh.Secret
	mu.Unlock()

	t.Run("incoming configuration request", func(t *testing.T) {
		setAnswer(func(w http.ResponseWriter, _ map[string]any) {
			_, _ = io.WriteString(w, `{"prompt":"Be brief.","variables":{"name":"Ada"},"agent_id":9}`)
		})
		agent := int64(3)
		res, err := x.Incoming(ctx, org, webhook.IncomingRequest{Channel: webhook.Web, CallID: 77, AgentID: &agent, Direction: "web", FromNumber: "web:abc"})
		require.NoError(t, err)
		require.Equal(t, "Be brief.", res.Prompt)
		require.Equal(t, map[string]string{"name": "Ada"}, res.Variables)
		require.Equal(t, int64(9), *res.AgentID)
		last := lastSeen()
		require.Equal(t, "web.incoming", last["type"])
		require.NotContains(t, last, "event_id", "legacy envelope")
		require.Equal(t, float64(77), last["data"].(map[string]any)["call_id"])

		setAnswer(func(w http.ResponseWriter, _ map[string]any) { w.WriteHeader(http.StatusNoContent) })
		res, err = x.Incoming(ctx, org, webhook.IncomingRequest{CallID: 78})
		require.NoError(t, err)
		require.Equal(t, webhook.IncomingResponse{}, res, "an empty answer changes nothing")
		require.Equal(t, "telephony.incoming", lastSeen()["type"])

		setAnswer(func(w http.ResponseWriter, _ map[string]any) { w.WriteHeader(http.StatusBadGateway) })
		_, err = x.Incoming(ctx, org, webhook.IncomingRequest{CallID: 79})
		require.ErrorIs(t, err, webhook.ErrExchange)
	})

	t.Run("tool dispatch", func(t *testing.T) {
		setAnswer(func(w http.ResponseWriter, body map[string]any) {
			args := body["data"].(map[string]any)["arguments"].(map[string]any)
			_ = json.NewEncoder(w).Encode(map[string]any{"output": map[string]any{"temp_c": 21, "city": args["city"]}})
		})
		res, err := x.Tool(ctx, org, webhook.ToolRequest{CallID: 5, ToolCallID: "tc_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"temp_c":21,"city":"Oslo"}`, string(res.Output))
		require.Equal(t, "telephony.tool", lastSeen()["type"])

		setAnswer(func(w http.ResponseWriter, _ map[string]any) { _, _ = io.WriteString(w, "sunny") })
		res, err = x.Tool(ctx, org, webhook.ToolRequest{CallID: 5, Name: "weather"})
		require.NoError(t, err)
		require.JSONEq(t, `"sunny"`, string(res.Output), "plain text is the output")

		setAnswer(func(w http.ResponseWriter, _ map[string]any) { _, _ = io.WriteString(w, `{"error":"no such city"}`) })
		res, err = x.Tool(ctx, org, webhook.ToolRequest{CallID: 5, Name: "weather"})
		require.NoError(t, err)
		require.Equal(t, "no such city", res.Error)
	})

	t.Run("a slow receiver is cut off", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		setAnswer(func(http.ResponseWriter, map[string]any) { <-release })
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond) // stands in for the 10 s limit
		defer cancel()
		start := time.Now()
		_, err := x.Incoming(cctx, org, webhook.IncomingRequest{CallID: 80})
		require.ErrorIs(t, err, webhook.ErrExchange)
		require.Less(t, time.Since(start), 5*time.Second)
	})
}
