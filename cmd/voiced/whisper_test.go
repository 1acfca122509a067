package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

const (
	whisperText = "Offer the annual plan with two months free."
	plainReply  = "Our monthly plan costs ten euros."
	guidedReply = "We also have an annual plan with two months free."
)

// whisperModel is a scripted OpenAI-compatible model: it answers
// guidedReply when a system message carries the whisper, else plainReply,
// and keeps every request's messages.
type whisperModel struct {
	mu   sync.Mutex
	reqs [][]kbMsg
}

func (m *whisperModel) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []kbMsg `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		reply := plainReply
		for _, msg := range req.Messages {
			if s, _ := msg.Content.(string); msg.Role == "system" && strings.Contains(s, whisperText) {
				reply = guidedReply
			}
		}
		m.mu.Lock()
		m.reqs = append(m.reqs, req.Messages)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(reply)
		sseChunk(w, `{"role":"assistant","content":`+string(b)+`}`, "")
		sseChunk(w, `{}`, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (m *whisperModel) requests() [][]kbMsg {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]kbMsg(nil), m.reqs...)
}

// TestWhisperChangesNextTurn, in serve on SQLite and PostgreSQL: a live
// realtime call answers its first turn plainly; a whisper (202) reaches
// the model's next request as a system message and changes the answer,
// while the transcript shows the turns and never the whisper (it is a
// call event of its own). Bad input is a 400 naming text, another org's
// or unknown call a 404, an ended call a 409.
func TestWhisperChangesNextTurn(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			m := &whisperModel{}
			model := m.server(t)
			args := []string{"--call-loopback=false", "--llm-base-url", model.URL + "/v1"}
			if db == "postgres" {
				args = append(args, "--database-url", sqltest.URL(t, migrations.Postgres))
			}
			sv := startTelephonyServe(t, args...)
			defer sv.stop(t)
			whisperScenario(t, m, sv, sv)
		})
	}
}

func (m *whisperModel) msgText(msg kbMsg) string { s, _ := msg.Content.(string); return s }

// whisperScenario runs a realtime call on node and whispers to it
// through sv's API (the same process in serve, the control plane in a
// cluster): see TestWhisperChangesNextTurn.
func whisperScenario(t *testing.T, m *whisperModel, sv, node *served) {
	st, ag := sv.call("POST", "/v1/agents", `{"name":"Sales","voice":"espeak:en-us","prompt":"Sell plans.","inbound_speak_order":"user_first"}`)
	require.Equal(t, 201, st, "%v", ag)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, rw := dialRealtimeAgent(t, ctx, node.base, sv.key, objID(ag))
	id := textTurn(t, node, nc, rw, "How much is it?", nil)
	require.Len(t, m.requests(), 1)
	path := fmt.Sprintf("/v1/calls/%d/whisper", id)

	for body, field := range map[string]string{`{}`: "text", `{"text":"  "}`: "text", `{"text":5}`: "text",
		`{"text":"` + strings.Repeat("x", 2001) + `"}`: "text"} {
		st, res := sv.call("POST", path, body)
		require.Equal(t, 400, st, "%s: %v", body, res)
		require.Contains(t, res, field)
	}
	st, res := sv.call("POST", path, `[1]`)
	require.Equal(t, 400, st, "%v", res)
	st, res = sv.call("POST", "/v1/calls/999999/whisper", `{"text":"hi"}`)
	require.Equal(t, 404, st, "%v", res)

	st, res = sv.call("POST", path, fmt.Sprintf(`{"text":%q}`, whisperText))
	require.Equal(t, 202, st, "%v", res)
	require.EqualValues(t, id, res["call_id"])

	// The next turn on the same socket.
	b, _ := json.Marshal("Anything cheaper over a year?")
	require.NoError(t, wsutil.WriteClientText(nc, []byte(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":`+string(b)+`}]}}`)))
	require.NoError(t, wsutil.WriteClientText(nc, []byte(`{"type":"response.create","response":{"output_modalities":["text"]}}`)))
	for {
		var ev struct {
			Type string `json:"type"`
		}
		nextRealtimeEvent(t, node, nc, rw, &ev)
		if ev.Type == "response.done" {
			break
		}
	}
	reqs := m.requests()
	require.Len(t, reqs, 2)
	for _, msg := range reqs[0] {
		require.NotContains(t, m.msgText(msg), whisperText, "the first turn predates the whisper")
	}
	last := reqs[1][len(reqs[1])-1]
	require.Equal(t, "system", last.Role, "the whisper is the request's last message: %v", reqs[1])
	require.Contains(t, m.msgText(last), whisperText)
	nc.Close()

	// The call ends: its transcript has both answers, not the whisper.
	require.Eventually(t, func() bool {
		_, c := sv.call("GET", fmt.Sprintf("/v1/calls/%d", id), "")
		return c["status"] != "in_progress"
	}, 15*time.Second, 50*time.Millisecond)
	st, tr := sv.call("GET", fmt.Sprintf("/v1/calls/%d/transcript", id), "")
	require.Equal(t, 200, st, "%v", tr)
	all, _ := json.Marshal(tr)
	require.Contains(t, string(all), plainReply)
	require.Contains(t, string(all), guidedReply)
	require.NotContains(t, string(all), "Offer the annual plan", "no whisper in the transcript")
	st, res = sv.call("POST", path, `{"text":"too late"}`)
	require.Equal(t, 409, st, "%v", res)
}

// TestWhisperAcrossNodes: control and two media nodes. A realtime call
// runs on one node, the whisper is asked of the control plane, which
// hands it to the nodes as a coord command; the node's next answer
// follows it. A sipp call runs on the other node and is listened to
// through control: the listen URL names that node, whose socket streams
// the call's audio (listenScenario), and the other node streams none.
func TestWhisperAcrossNodes(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	dbURL, redisURL := sqltest.URL(t, migrations.Postgres), isolatedRedis(t)
	secret := strings.Repeat("5ecre7", 6)
	m, m2 := &whisperModel{}, &whisperModel{}
	model, model2 := m.server(t), m2.server(t)
	ctlDir := t.TempDir()
	ctl := startRole(t, "control", "--data-dir", ctlDir, "--database-url", dbURL, "--redis-url", redisURL,
		"--http-addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0", "--cluster-secret", secret)
	base := "http://" + ctl.waitLog(t, `http_addr=(127\.0\.0\.1:\d+)`)
	internal := "http://" + ctl.waitLog(t, `internal_addr=(127\.0\.0\.1:\d+)`)
	key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(ctl.stdout.String())
	require.NotEmpty(t, key)
	sv := &served{base: base, key: key, stderr: ctl.stderr}
	sv.call = func(method, path, body string) (int, map[string]any) {
		var out map[string]any
		st := apiCall(t, base, key, method, path, jsonBody(body), &out)
		return st, out
	}
	media := startRole(t, "media", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0",
		"--rtp-ports", "44000-44199", "--webrtc-udp-addr", "127.0.0.1:0", "--call-loopback=false", "--llm-base-url", model.URL+"/v1",
		"--control-url", internal, "--cluster-secret", secret, "--redis-url", redisURL, "--node-id", fmt.Sprintf("whisper-%d", time.Now().UnixNano()))
	node := &served{base: "http://" + media.waitLog(t, `media node serving" http_addr=(127\.0\.0\.1:\d+)`), key: key, stderr: media.stderr}
	sipPort := siptest.FreePort(t, "127.0.0.1")
	media2 := startRole(t, "media", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:"+strconv.Itoa(sipPort),
		"--rtp-ports", "44200-44399", "--webrtc-udp-addr", "127.0.0.1:0", "--call-loopback=false", "--llm-base-url", model2.URL+"/v1",
		"--stt-base-url", listenTranscriber(t)+"/v1", "--control-url", internal, "--cluster-secret", secret, "--redis-url", redisURL,
		"--node-id", fmt.Sprintf("listen-%d", time.Now().UnixNano()))
	node2 := media2.waitLog(t, `media node serving" http_addr=(127\.0\.0\.1:\d+)`)
	whisperScenario(t, m, sv, node)
	require.Contains(t, media.stderr.String(), "whisper delivered")
	listenScenario(t, sv.call, filepath.Join(ctlDir, "blobs"), sipPort, node2)
	require.Contains(t, media2.stderr.String(), "listener connected")
	require.NotContains(t, media.stderr.String(), "listener connected", "the other node streamed nothing")
	media.stop(t)
	media2.stop(t)
	ctl.stop(t)
}
