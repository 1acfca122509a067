package rtc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtc"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
	"github.com/voiced/voiced/media/pace"
	mwebrtc "github.com/voiced/voiced/media/webrtc"
)

// micNode is the media node's side for the test: voiced's real WebRTC
// front door (media/webrtc) running the Echo conversation (each caller
// turn played back), behind a stand-in for the control plane's two
// mic-session endpoints.
type micNode struct {
	t      *testing.T
	srv    *mwebrtc.Server
	http   *httptest.Server
	wg     sync.WaitGroup
	mu     sync.Mutex
	tokens int
	ended  []string
}

func newMicNode(t *testing.T) *micNode {
	p, err := pace.New(pace.Config{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	srv, err := mwebrtc.New(mwebrtc.Config{IncludeLoopback: true}, nil, p)
	require.NoError(t, err)
	n := &micNode{t: t, srv: srv}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/mic-session", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			AgentID int64 `json:"agent_id"`
		}
		if r.Header.Get("Authorization") != "Bearer sk_live_test" || json.NewDecoder(r.Body).Decode(&in) != nil || in.AgentID != 7 {
			http.Error(w, `{"detail":"no"}`, http.StatusUnauthorized)
			return
		}
		n.mu.Lock()
		n.tokens++
		n.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"token": "mic_1", "server_url": n.http.URL + "/v1/mic-session/connect", "call_id": 1})
	})
	mux.HandleFunc("POST /v1/mic-session/connect", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Token, SDP string }
		if json.NewDecoder(r.Body).Decode(&in) != nil || in.Token != "mic_1" {
			http.Error(w, `{"detail":"bad token"}`, http.StatusUnauthorized)
			return
		}
		sess, answer, err := srv.Answer(r.Context(), in.SDP, mwebrtc.SessionOptions{})
		if err != nil {
			http.Error(w, `{"detail":"bad offer"}`, http.StatusBadRequest)
			return
		}
		echo, err := mwebrtc.NewEcho(sess.InputRate())
		require.NoError(t, err)
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			sess.Run(echo)
			reason, _ := sess.End()
			n.mu.Lock()
			n.ended = append(n.ended, reason)
			n.mu.Unlock()
		}()
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"type": "answer", "sdp": answer, "call_id": 1})
	})
	n.http = httptest.NewServer(mux)
	t.Cleanup(func() {
		n.http.Close()
		srv.Close()
		n.wg.Wait()
	})
	return n
}

func TestCallsThroughMicSessions(t *testing.T) {
	node := newMicNode(t)
	pcm, rate, err := audio.DefaultPrompt()
	require.NoError(t, err)
	src, err := audio.NewSource(pcm, rate, 1200*time.Millisecond)
	require.NoError(t, err)
	target, err := rtc.NewTarget(rtc.Config{Source: src, Signal: &rtc.MicSession{Base: node.http.URL, APIKey: "sk_live_test", AgentID: 7}})
	require.NoError(t, err)

	g, err := load.New(load.Config{Codec: sdp.Opus, Source: src, Topology: load.Agent, Rate: 20}, target, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	failed, err := g.Scale(ctx, 2)
	require.NoError(t, err)
	require.Zero(t, failed)
	// One prompt (2.9 s), the Echo's 400 ms turn end, and its playback.
	w, err := g.Measure(ctx, 6500*time.Millisecond)
	require.NoError(t, err)
	require.Greater(t, w.Sent, uint64(500))
	require.Positive(t, w.Received, "the node's audio came back")
	res := g.Stop()
	require.Len(t, res, 2)
	for _, r := range res {
		require.True(t, r.OK(), r.Err)
		require.Positive(t, r.Received)
		require.Zero(t, r.Lost)
		require.NotEmpty(t, r.Lags, "the prompt was played back")
		require.Greater(t, r.ResponseMs, 300.0, "the Echo waits for 400 ms of quiet")
		require.Less(t, r.ResponseMs, 2000.0)
		require.Greater(t, r.FirstAudioMs, 2000.0, "after the whole prompt")
	}
	require.Eventually(t, func() bool {
		node.mu.Lock()
		defer node.mu.Unlock()
		return len(node.ended) == 2
	}, 5*time.Second, 20*time.Millisecond, "the node saw both calls end")
	node.mu.Lock()
	require.Equal(t, 2, node.tokens)
	for _, r := range node.ended {
		require.Equal(t, "caller_hangup", r)
	}
	node.mu.Unlock()
}

func TestRefusedSignalling(t *testing.T) {
	node := newMicNode(t)
	pcm, rate, _ := audio.DefaultPrompt()
	src, err := audio.NewSource(pcm, rate, time.Second)
	require.NoError(t, err)
	target, err := rtc.NewTarget(rtc.Config{Source: src, Signal: &rtc.MicSession{Base: node.http.URL, APIKey: "sk_live_wrong", AgentID: 7}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err = target.Dial(ctx, load.Offer{Codec: sdp.Opus})
	require.ErrorIs(t, err, rtc.ErrSignal)
	require.ErrorContains(t, err, "401")

	_, err = rtc.NewTarget(rtc.Config{Source: src})
	require.ErrorIs(t, err, rtc.ErrConfig)
}
