package realtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestRealtimeSessions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)
		w := a.World()
		a.Credit(w.Org.ID, 500)
		ag := a.Agent(w.OwnerK, "Front desk", map[string]any{"prompt": "Answer for Acme.", "first_message": "Hi, Acme here."})
		ctx := context.Background()

		t.Run("not mounted", func(t *testing.T) {
			r := a.Do("POST", "/v1/realtime/sessions", w.OwnerK, map[string]any{"agent_id": controltest.ID(ag)})
			require.Equal(t, 503, r.Status, string(r.Body))
			r = a.Do("GET", "/v1/realtime", "", nil)
			require.Equal(t, 503, r.Status)
		})
		a.Srv.Realtime().Mount(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUpgradeRequired)
			_, _ = w.Write([]byte(`{"detail":"websocket"}`))
		}))

		t.Run("the socket route reaches the mounted handler", func(t *testing.T) {
			r := a.Do("GET", "/v1/realtime?agent_id=1", "", nil)
			require.Equal(t, http.StatusUpgradeRequired, r.Status)
			require.Equal(t, "websocket", r.Obj(t)["detail"])
		})

		t.Run("validation", func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				body   any
				status int
				fields []string
			}{
				{"both", map[string]any{"agent_id": controltest.ID(ag), "config": map[string]any{"prompt": "x"}}, 400, []string{"agent_id", "config"}},
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
					r := a.Do("POST", "/v1/realtime/sessions", w.OwnerK, tc.body)
					require.Equal(t, tc.status, r.Status, string(r.Body))
					m := r.Obj(t)
					for _, f := range tc.fields {
						require.Contains(t, m, f, string(r.Body))
					}
				})
			}
			require.Equal(t, 401, a.Do("POST", "/v1/realtime/sessions", "", map[string]any{"agent_id": controltest.ID(ag)}).Status)
		})

		t.Run("saved agent: token, claim once", func(t *testing.T) {
			r := a.Do("POST", "/v1/realtime/sessions", w.OwnerK, map[string]any{"agent_id": controltest.ID(ag)})
			require.Equal(t, 201, r.Status, string(r.Body))
			m := r.Obj(t)
			require.Equal(t, "wss://voice.example/v1/realtime", m["media_url"])
			require.True(t, strings.HasPrefix(m["room_name"].(string), "realtime-"))
			tok := m["token"].(string)
			require.True(t, strings.HasPrefix(tok, "rt_"))
			callID := controltest.ID(m)
			c := a.Do("GET", "/v1/calls/"+jsonNum(callID), w.OwnerK, nil).Obj(t)
			require.Equal(t, "web", c["direction"])
			require.Equal(t, "in_progress", c["status"])
			require.Equal(t, m["room_name"], c["media_room_name"])

			forged := tok[:len(tok)-2] + "00"
			if forged == tok { // one token in 256 or so ends in "00" already
				forged = tok[:len(tok)-2] + "11"
			}
			_, err := a.Srv.Realtime().ClaimRealtimeToken(ctx, forged)
			require.ErrorIs(t, err, realtime.ErrInvalidCredential, "forged signature")
			g, err := a.Srv.Realtime().ClaimRealtimeToken(ctx, tok)
			require.NoError(t, err)
			require.False(t, g.Inline)
			require.Equal(t, callID, g.CallID)
			require.Equal(t, controltest.ID(ag), g.AgentID)
			require.Equal(t, "Answer for Acme.", g.Agent.Prompt)
			require.Equal(t, "Hi, Acme here.", *g.Agent.FirstMessage)
			require.Positive(t, g.MaxDuration)
			_, err = a.Srv.Realtime().ClaimRealtimeToken(ctx, tok)
			require.ErrorIs(t, err, realtime.ErrInvalidCredential, "used twice")
		})

		t.Run("inline config", func(t *testing.T) {
			r := a.Do("POST", "/v1/realtime/sessions", w.OwnerK, map[string]any{"config": map[string]any{
				"prompt": "Inline prompt", "voice": "espeak:en-us", "telephony": false, "placeholders": []string{"One moment."},
				"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}}})
			require.Equal(t, 201, r.Status, string(r.Body))
			g, err := a.Srv.Realtime().ClaimRealtimeToken(ctx, r.Obj(t)["token"].(string))
			require.NoError(t, err)
			require.True(t, g.Inline)
			require.Zero(t, g.AgentID)
			require.Equal(t, "Inline prompt", g.Agent.Prompt)
			require.Equal(t, "near_field", g.Agent.Telephony.NoiseReduction)
			require.False(t, g.Agent.Telephony.EchoCancellation)
			require.Equal(t, []string{"One moment."}, g.Agent.Placeholders)
			require.Equal(t, "lookup", g.Agent.Tools[0].Name)
			require.Zero(t, g.Agent.SilenceIntervalSeconds, "no check-ins inline")
			c := a.Do("GET", "/v1/calls/"+jsonNum(g.CallID), w.OwnerK, nil).Obj(t)
			require.Nil(t, c["agent_id"])
			require.Equal(t, "Inline prompt", c["prompt_snapshot"])
		})

		t.Run("admit inline directly", func(t *testing.T) {
			log := a.Srv.CallLog()
			_, err := log.AdmitInline(ctx, w.Org.ID, json.RawMessage(`{"prompt":"p","colour":"blue"}`), "")
			var ae *control.APIError
			require.ErrorAs(t, err, &ae)
			require.Contains(t, ae.Fields, "colour")
			adm, err := log.AdmitInline(ctx, w.Org.ID, json.RawMessage(`{"prompt":"p"}`), "room-1")
			require.NoError(t, err)
			require.NoError(t, log.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "completed", Reason: "caller_hangup"}))
		})

		t.Run("no balance", func(t *testing.T) {
			poor := a.World()
			pag := a.Agent(poor.OwnerK, "Poor", nil)
			r := a.Do("POST", "/v1/realtime/sessions", poor.OwnerK, map[string]any{"agent_id": controltest.ID(pag)})
			require.Equal(t, 402, r.Status, string(r.Body))
			r = a.Do("POST", "/v1/realtime/sessions", poor.OwnerK, map[string]any{"config": map[string]any{"prompt": "x"}})
			require.Equal(t, 402, r.Status, string(r.Body))
			_, err := a.Srv.CallLog().AdmitInline(ctx, poor.Org.ID, json.RawMessage(`{"prompt":"p"}`), "")
			require.ErrorIs(t, err, calllog.ErrInsufficientBalance)
		})

		t.Run("api keys", func(t *testing.T) {
			org, err := a.Srv.Realtime().AuthenticateAPIKey(ctx, strings.TrimPrefix(w.OwnerK, "Bearer "))
			require.NoError(t, err)
			require.Equal(t, w.Org.ID, org)
			for _, k := range []string{"sk_live_nope", "pk_live_x", ""} {
				_, err = a.Srv.Realtime().AuthenticateAPIKey(ctx, k)
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
		a, b := controltest.NewResources(t, db, controltest.Pool), controltest.NewResources(t, db, controltest.Pool)
		mount := func(x *controltest.Resources) {
			x.Srv.Realtime().Mount(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUpgradeRequired) }))
		}
		mount(a)
		mount(b)
		w := a.World()
		a.Credit(w.Org.ID, 500)
		ctx := context.Background()

		r := a.Do("POST", "/v1/realtime/sessions", w.OwnerK, map[string]any{"config": map[string]any{
			"prompt": "Inline on replica A", "voice": "espeak:en-us", "placeholders": []string{"One moment."},
			"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}}})
		require.Equal(t, 201, r.Status, string(r.Body))
		m := r.Obj(t)
		tok := m["token"].(string)
		g, err := b.Srv.Realtime().ClaimRealtimeToken(ctx, tok)
		require.NoError(t, err)
		require.True(t, g.Inline)
		require.Equal(t, controltest.ID(m), g.CallID)
		require.Equal(t, w.Org.ID, g.OrgID)
		require.Equal(t, "Inline on replica A", g.Agent.Prompt)
		require.Equal(t, []string{"One moment."}, g.Agent.Placeholders)
		require.Equal(t, "lookup", g.Agent.Tools[0].Name)
		require.JSONEq(t, `{"type":"object"}`, string(g.Agent.Tools[0].Parameters))
		require.Positive(t, g.MaxDuration)
		for _, x := range []*controltest.Resources{a, b} {
			_, err = x.Srv.Realtime().ClaimRealtimeToken(ctx, tok)
			require.ErrorIs(t, err, realtime.ErrInvalidCredential, "used once, on any replica")
		}

		// A saved agent's session, created on B, redeemed on A.
		ag := b.Agent(w.OwnerK, "Front desk", map[string]any{"prompt": "Answer for Acme.", "first_message": "Hi, Acme here."})
		r = b.Do("POST", "/v1/realtime/sessions", w.OwnerK, map[string]any{"agent_id": controltest.ID(ag)})
		require.Equal(t, 201, r.Status, string(r.Body))
		g, err = a.Srv.Realtime().ClaimRealtimeToken(ctx, r.Obj(t)["token"].(string))
		require.NoError(t, err)
		require.False(t, g.Inline)
		require.Equal(t, controltest.ID(ag), g.AgentID)
		require.Equal(t, "Hi, Acme here.", *g.Agent.FirstMessage)
	})
}
