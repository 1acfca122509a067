package rtws_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtws"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

// fakeRealtime is a minimal server of the realtime protocol at the
// boundary voicebench talks to: it checks the key, announces the session,
// accepts (or refuses) session.update, and echoes every appended chunk
// back as response.output_audio.delta.
type fakeRealtime struct {
	refuse  bool
	queries atomic.Value // last query string
	updates atomic.Int32
	appends atomic.Int32
	closed  atomic.Int32
}

func (f *fakeRealtime) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer sk_live_test" {
		http.Error(w, `{"detail":"bad key"}`, http.StatusUnauthorized)
		return
	}
	f.queries.Store(r.URL.RawQuery)
	conn, _, _, err := ws.UpgradeHTTP(r, w)
	if err != nil {
		return
	}
	defer conn.Close()
	send := func(v any) {
		b, _ := json.Marshal(v)
		wsutil.WriteServerMessage(conn, ws.OpText, b)
	}
	send(map[string]any{"type": "session.created"})
	for {
		b, op, err := wsutil.ReadClientData(conn)
		if err != nil {
			f.closed.Add(1)
			return
		}
		if op != ws.OpText {
			continue
		}
		var e struct {
			Type  string `json:"type"`
			Audio string `json:"audio"`
		}
		json.Unmarshal(b, &e)
		switch e.Type {
		case "session.update":
			f.updates.Add(1)
			if f.refuse {
				send(map[string]any{"type": "error", "error": map[string]any{"code": "invalid_value", "message": "no"}})
				continue
			}
			send(map[string]any{"type": "session.updated"})
		case "input_audio_buffer.append":
			f.appends.Add(1)
			send(map[string]any{"type": "response.output_audio.delta", "delta": e.Audio})
		}
	}
}

func source(t *testing.T) *audio.Source {
	pcm, rate, err := audio.DefaultPrompt()
	require.NoError(t, err)
	s, err := audio.NewSource(pcm, rate, 300*time.Millisecond)
	require.NoError(t, err)
	return s
}

func TestEchoSessions(t *testing.T) {
	for _, format := range []string{"pcm16", "g711_ulaw"} {
		t.Run(format, func(t *testing.T) {
			fake := &fakeRealtime{}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			f, err := rtws.ParseFormat(format, 16000)
			require.NoError(t, err)
			target, err := rtws.NewTarget(rtws.Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/realtime", APIKey: "sk_live_test",
				Format: f, Source: source(t)})
			require.NoError(t, err)
			require.True(t, target.Inline())
			g, err := load.New(load.Config{Codec: sdp.PCMU, Source: source(t), Topology: load.Echo, Rate: 100}, target, nil)
			require.NoError(t, err)
			failed, err := g.Scale(context.Background(), 3)
			require.NoError(t, err)
			require.Zero(t, failed)
			w, err := g.Measure(context.Background(), time.Second)
			require.NoError(t, err)
			require.Greater(t, w.Sent, uint64(100))
			require.InDelta(t, float64(w.Sent), float64(w.Received), 10)
			require.Positive(t, w.Jitter.Count(), "per-delta |D| reaches the window")
			res := g.Stop()
			require.Positive(t, g.JitterHistogram().Count())
			require.Len(t, res, 3)
			require.Equal(t, int32(3), fake.updates.Load())
			require.Eventually(t, func() bool { return fake.closed.Load() == 3 }, 2*time.Second, 10*time.Millisecond)
			for _, r := range res {
				require.True(t, r.OK(), r.Err)
				require.Empty(t, r.HangupErr)
				require.InDelta(t, float64(r.Sent), float64(r.Received), 3)
				require.Zero(t, r.Lost)
				require.NotEmpty(t, r.Lags, "the echoed prompt was recognised")
				require.Less(t, r.OneWayMs, 40.0)
				require.Greater(t, r.FirstAudioMs, 20.0)
			}
		})
	}
}

func TestSavedAgentAndRefusals(t *testing.T) {
	fake := &fakeRealtime{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	base := "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/realtime"
	f, err := rtws.ParseFormat("g711_alaw", 0)
	require.NoError(t, err)

	target, err := rtws.NewTarget(rtws.Config{URL: base + "?agent_id=7", APIKey: "sk_live_test", Format: f, Source: source(t)})
	require.NoError(t, err)
	require.False(t, target.Inline())
	sess, _, err := target.Dial(context.Background(), load.Offer{})
	require.NoError(t, err)
	require.NoError(t, sess.Hangup(context.Background()))
	require.Zero(t, fake.updates.Load(), "a saved agent's session needs no session.update")
	q := fake.queries.Load().(string)
	require.Contains(t, q, "agent_id=7")
	require.Contains(t, q, "input_audio_format=g711_alaw")

	bad, err := rtws.NewTarget(rtws.Config{URL: base, APIKey: "sk_live_wrong", Format: f, Source: source(t)})
	require.NoError(t, err)
	_, _, err = bad.Dial(context.Background(), load.Offer{})
	require.Error(t, err)

	fake.refuse = true
	refused, err := rtws.NewTarget(rtws.Config{URL: base, APIKey: "sk_live_test", Format: f, Source: source(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _, err = refused.Dial(ctx, load.Offer{})
	require.ErrorIs(t, err, rtws.ErrRefused)
	require.ErrorContains(t, err, "invalid_value no")

	_, err = rtws.ParseFormat("pcm16", 8000)
	require.ErrorIs(t, err, rtws.ErrConfig)
	_, err = rtws.NewTarget(rtws.Config{URL: "http://x", Format: f, Source: source(t)})
	require.ErrorIs(t, err, rtws.ErrConfig)
}
