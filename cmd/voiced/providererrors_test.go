package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"
)

// The node's providers feed the control plane's provider window: with
// a model (an OpenAI-compatible server at the provider boundary) that
// fails every second request, a dozen realtime text turns are enough for
// the status heartbeat to call the call products degraded for provider
// errors, while the API stays operational.
func TestProviderErrorsDegradeTheHeartbeat(t *testing.T) {
	var n atomic.Int64
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", 404)
			return
		}
		if n.Add(1)%2 == 0 {
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, 500)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Sure.\"},\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer model.Close()
	sv := startTelephonyServe(t, "--llm-base-url", model.URL+"/v1")
	defer sv.stop(t)

	products := func() map[string]map[string]any {
		res, err := http.Get(sv.base + "/v1/status/heartbeat")
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
		var st struct {
			Products []map[string]any `json:"products"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&st))
		by := map[string]map[string]any{}
		for _, p := range st.Products {
			by[p["name"].(string)] = p
		}
		return by
	}

	// Twelve text turns on the realtime socket, each answered by the model
	// or failed by it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(http.Header{"Authorization": {"Bearer " + sv.key}})}
	nc, br, _, err := d.Dial(ctx, strings.Replace(sv.base, "http://", "ws://", 1)+"/v1/realtime")
	require.NoError(t, err)
	defer nc.Close()
	var r io.Reader = nc
	if br != nil {
		r = io.MultiReader(br, nc)
	}
	rw := struct {
		io.Reader
		io.Writer
	}{r, nc}
	send := func(v string) { require.NoError(t, wsutil.WriteClientText(nc, []byte(v))) }
	// A session without a saved agent starts at its session.update.
	send(`{"type":"session.update","session":{"type":"realtime","instructions":"Be brief.","output_modalities":["text"]}}`)
	statuses := map[string]int{}
	for i := range 12 {
		send(fmt.Sprintf(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Turn %d."}]}}`, i))
		send(`{"type":"response.create","response":{"output_modalities":["text"]}}`)
		for {
			var ev struct {
				Type     string `json:"type"`
				Response struct {
					Status string `json:"status"`
				} `json:"response"`
			}
			nextRealtimeEvent(t, sv, nc, rw, &ev)
			if ev.Type == "response.done" {
				statuses[ev.Response.Status]++
				break
			}
		}
	}
	t.Logf("response statuses: %v; model requests: %d", statuses, n.Load())
	require.Equal(t, 6, statuses["completed"], "%v", statuses)

	var by map[string]map[string]any
	require.Eventually(t, func() bool {
		by = products()
		return by["realtime"]["status"] == "degraded"
	}, 10*time.Second, 250*time.Millisecond, "%v", by)
	for _, p := range []string{"telephony", "browser_calls", "realtime"} {
		require.Equal(t, "degraded", by[p]["status"], "%s: %v", p, by[p])
		require.Contains(t, by[p]["reasons"], "provider_errors", "%s: %v", p, by[p])
	}
	require.Equal(t, "operational", by["api"]["status"], "%v", by["api"])
}

// nextRealtimeEvent reads the server's next realtime event into ev (20 s
// at most); an error event fails the test.
func nextRealtimeEvent(t testing.TB, sv *served, nc net.Conn, rw io.ReadWriter, ev any) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	data, _, err := wsutil.ReadServerData(rw)
	require.NoError(t, err, "serve's log:\n%s", sv.stderr.String())
	var head struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.Unmarshal(data, &head))
	require.NotEqual(t, "error", head.Type, "%s", data)
	require.NoError(t, json.Unmarshal(data, ev))
}
