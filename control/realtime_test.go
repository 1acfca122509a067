package control_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestRealtimeSessions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newResAPI(t, db, testPool)
		w := a.world()
		a.credit(w.org.ID, 500)
		ag := a.agent(w.ownerK, "Front desk", map[string]any{"prompt": "Answer for Acme.", "first_message": "Hi, Acme here."})
		ctx := context.Background()

		t.Run("not mounted", func(t *testing.T) {
			r := a.do("POST", "/v1/realtime/sessions", w.ownerK, map[string]any{"agent_id": id(ag)})
			require.Equal(t, 503, r.status, string(r.body))
			r = a.do("GET", "/v1/realtime", "", nil)
			require.Equal(t, 503, r.status)
		})
		a.srv.Realtime().Mount(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUpgradeRequired)
			_, _ = w.Write([]byte(`{"detail":"websocket"}`))
		}))

		t.Run("the socket route reaches the mounted handler", func(t *testing.T) {
			r := a.do("GET", "/v1/realtime?agent_id=1", "", nil)
			require.Equal(t, http.StatusUpgradeRequired, r.status)
			require.Equal(t, "websocket", r.obj(t)["detail"])
		})

		t.Run("validation", func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				body   any
				status int
				fields []string
			}{
				{"both", map[string]any{"agent_id": id(ag), "config": map[string]any{"prompt": "x"}}, 400, []string{"agent_id", "config"}},
				{"neither", map[string]any{}, 400, []string{"agent_id"}},
				{"agent id not a number", map[string]any{"agent_id": "seven"}, 400, []string{"agent_id"}},
				{"unknown config key", map[string]any{"config": map[string]any{"prompt": "x", "first_message": "hi"}}, 400, []string{"config.first_message"}},
				{"prompt missing", map[string]any{"config": map[string]any{"voice": "espeak:en-us"}}, 400, []string{"config.prompt"}},
				{"bad voice", map[string]any{"config": map[string]any{"prompt": "x", "voice": "nobody"}}, 400, []string{"config.voice"}},
				{"bad type", map[string]any{"config": map[string]any{"prompt": "x", "placeholders": "one"}}, 400, []string{"config.placeholders"}},
				{"config not an object", map[string]any{"config": []int{1}}, 400, []string{"config"}},
				{"unknown agent", map[string]any{"agent_id": 999999}, 404, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := a.do("POST", "/v1/realtime/sessions", w.ownerK, tc.body)
					require.Equal(t, tc.status, r.status, string(r.body))
					m := r.obj(t)
					for _, f := range tc.fields {
						require.Contains(t, m, f, string(r.body))
					}
				})
			}
			require.Equal(t, 401, a.do("POST", "/v1/realtime/sessions", "", map[string]any{"agent_id": id(ag)}).status)
		})

		t.Run("saved agent: token, claim once", func(t *testing.T) {
			r := a.do("POST", "/v1/realtime/sessions", w.ownerK, map[string]any{"agent_id": id(ag)})
			require.Equal(t, 201, r.status, string(r.body))
			m := r.obj(t)
			require.Equal(t, "wss://voice.example/v1/realtime", m["media_url"])
			require.True(t, strings.HasPrefix(m["room_name"].(string), "realtime-"))
			tok := m["token"].(string)
			require.True(t, strings.HasPrefix(tok, "rt_"))
			callID := id(m)
			c := a.do("GET", "/v1/calls/"+jsonNum(callID), w.ownerK, nil).obj(t)
			require.Equal(t, "web", c["direction"])
			require.Equal(t, "in_progress", c["status"])
			require.Equal(t, m["room_name"], c["media_room_name"])

			forged := tok[:len(tok)-2] + "00"
			if forged == tok { // one token in 256 or so ends in "00" already
				forged = tok[:len(tok)-2] + "11"
			}
			_, err := a.srv.Realtime().ClaimRealtimeToken(ctx, forged)
			require.ErrorIs(t, err, realtime.ErrInvalidCredential, "forged signature")
			g, err := a.srv.Realtime().ClaimRealtimeToken(ctx, tok)
			require.NoError(t, err)
			require.False(t, g.Inline)
			require.Equal(t, callID, g.CallID)
			require.Equal(t, id(ag), g.AgentID)
			require.Equal(t, "Answer for Acme.", g.Agent.Prompt)
			require.Equal(t, "Hi, Acme here.", *g.Agent.FirstMessage)
			require.Positive(t, g.MaxDuration)
			_, err = a.srv.Realtime().ClaimRealtimeToken(ctx, tok)
			require.ErrorIs(t, err, realtime.ErrInvalidCredential, "used twice")
		})

		t.Run("inline config", func(t *testing.T) {
			r := a.do("POST", "/v1/realtime/sessions", w.ownerK, map[string]any{"config": map[string]any{
				"prompt": "Inline prompt", "voice": "espeak:en-us", "telephony": false, "placeholders": []string{"One moment."},
				"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}}})
			require.Equal(t, 201, r.status, string(r.body))
			g, err := a.srv.Realtime().ClaimRealtimeToken(ctx, r.obj(t)["token"].(string))
			require.NoError(t, err)
			require.True(t, g.Inline)
			require.Zero(t, g.AgentID)
			require.Equal(t, "Inline prompt", g.Agent.Prompt)
			require.Equal(t, "near_field", g.Agent.Telephony.NoiseReduction)
			require.False(t, g.Agent.Telephony.EchoCancellation)
			require.Equal(t, []string{"One moment."}, g.Agent.Placeholders)
			require.Equal(t, "lookup", g.Agent.Tools[0].Name)
			require.Zero(t, g.Agent.SilenceIntervalSeconds, "no check-ins inline")
			c := a.do("GET", "/v1/calls/"+jsonNum(g.CallID), w.ownerK, nil).obj(t)
			require.Nil(t, c["agent_id"])
			require.Equal(t, "Inline prompt", c["prompt_snapshot"])
		})

		t.Run("admit inline directly", func(t *testing.T) {
			log := a.srv.CallLog()
			_, err := log.AdmitInline(ctx, w.org.ID, json.RawMessage(`{"prompt":"p","colour":"blue"}`), "")
			var ae *control.APIError
			require.ErrorAs(t, err, &ae)
			require.Contains(t, ae.Fields, "colour")
			adm, err := log.AdmitInline(ctx, w.org.ID, json.RawMessage(`{"prompt":"p"}`), "room-1")
			require.NoError(t, err)
			require.NoError(t, log.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "completed", Reason: "caller_hangup"}))
		})

		t.Run("no balance", func(t *testing.T) {
			poor := a.world()
			pag := a.agent(poor.ownerK, "Poor", nil)
			r := a.do("POST", "/v1/realtime/sessions", poor.ownerK, map[string]any{"agent_id": id(pag)})
			require.Equal(t, 402, r.status, string(r.body))
			r = a.do("POST", "/v1/realtime/sessions", poor.ownerK, map[string]any{"config": map[string]any{"prompt": "x"}})
			require.Equal(t, 402, r.status, string(r.body))
			_, err := a.srv.CallLog().AdmitInline(ctx, poor.org.ID, json.RawMessage(`{"prompt":"p"}`), "")
			require.ErrorIs(t, err, calllog.ErrInsufficientBalance)
		})

		t.Run("api keys", func(t *testing.T) {
			org, err := a.srv.Realtime().AuthenticateAPIKey(ctx, strings.TrimPrefix(w.ownerK, "Bearer "))
			require.NoError(t, err)
			require.Equal(t, w.org.ID, org)
			for _, k := range []string{"sk_live_nope", "pk_live_x", ""} {
				_, err = a.srv.Realtime().AuthenticateAPIKey(ctx, k)
				require.ErrorIs(t, err, realtime.ErrInvalidCredential)
			}
		})
	})
}

func jsonNum(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Two control replicas over one database (each with its own in-process
// coordination, as if on two machines): a session created through one is
// redeemed by a socket that reached the other, once.
func TestRealtimeSessionsAcrossReplicas(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a, b := newResAPI(t, db, testPool), newResAPI(t, db, testPool)
		mount := func(x *resAPI) {
			x.srv.Realtime().Mount(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUpgradeRequired) }))
		}
		mount(a)
		mount(b)
		w := a.world()
		a.credit(w.org.ID, 500)
		ctx := context.Background()

		r := a.do("POST", "/v1/realtime/sessions", w.ownerK, map[string]any{"config": map[string]any{
			"prompt": "Inline on replica A", "voice": "espeak:en-us", "placeholders": []string{"One moment."},
			"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}}})
		require.Equal(t, 201, r.status, string(r.body))
		m := r.obj(t)
		tok := m["token"].(string)
		g, err := b.srv.Realtime().ClaimRealtimeToken(ctx, tok)
		require.NoError(t, err)
		require.True(t, g.Inline)
		require.Equal(t, id(m), g.CallID)
		require.Equal(t, w.org.ID, g.OrgID)
		require.Equal(t, "Inline on replica A", g.Agent.Prompt)
		require.Equal(t, []string{"One moment."}, g.Agent.Placeholders)
		require.Equal(t, "lookup", g.Agent.Tools[0].Name)
		require.JSONEq(t, `{"type":"object"}`, string(g.Agent.Tools[0].Parameters))
		require.Positive(t, g.MaxDuration)
		for _, x := range []*resAPI{a, b} {
			_, err = x.srv.Realtime().ClaimRealtimeToken(ctx, tok)
			require.ErrorIs(t, err, realtime.ErrInvalidCredential, "used once, on any replica")
		}

		// A saved agent's session, created on B, redeemed on A.
		ag := b.agent(w.ownerK, "Front desk", map[string]any{"prompt": "Answer for Acme.", "first_message": "Hi, Acme here."})
		r = b.do("POST", "/v1/realtime/sessions", w.ownerK, map[string]any{"agent_id": id(ag)})
		require.Equal(t, 201, r.status, string(r.body))
		g, err = a.srv.Realtime().ClaimRealtimeToken(ctx, r.obj(t)["token"].(string))
		require.NoError(t, err)
		require.False(t, g.Inline)
		require.Equal(t, id(ag), g.AgentID)
		require.Equal(t, "Hi, Acme here.", *g.Agent.FirstMessage)
	})
}
