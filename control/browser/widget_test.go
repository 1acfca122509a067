package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// fakeMedia stands in for media/webrtc at the control/media boundary: it
// records the calls handed to it and answers with a fixed SDP.
type fakeMedia struct {
	mu       sync.Mutex
	calls    []control.BrowserCall
	offers   []string
	checkErr error
	answer   func(offer string) (string, error)
}

func (m *fakeMedia) Check(context.Context) error { return m.checkErr }

func (m *fakeMedia) Answer(_ context.Context, c control.BrowserCall, offer string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, c)
	m.offers = append(m.offers, offer)
	if m.answer != nil {
		return m.answer(offer)
	}
	return "v=0 answer for " + offer, nil
}

func (m *fakeMedia) last() control.BrowserCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[len(m.calls)-1]
}

// browserAPI is an API with a fake media side.
type browserAPI struct {
	*controltest.API
	media *fakeMedia
}

func newBrowserAPI(t *testing.T, db *storage.DB, withMedia bool) *browserAPI {
	m := &fakeMedia{}
	var opts []control.Option
	if withMedia {
		opts = append(opts, control.WithBrowserMedia(m))
	}
	a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Webhooks: webhook.Config{AllowLoopback: true}}, opts...)
	return &browserAPI{API: a, media: m}
}

func (a *browserAPI) widgetCall(origin, key string) controltest.Resp {
	a.T.Helper()
	hdr := map[string]string{}
	if origin != "" {
		hdr["Origin"] = origin
	}
	return a.Raw("POST", "/v1/widget/calls", hdr, map[string]any{"publishable_key": key, "sdp": "v=0 offer"})
}

func (a *browserAPI) pk(w controltest.World, body map[string]any) map[string]any {
	a.T.Helper()
	r := a.Do("POST", "/v1/publishable-key", w.AdminK, body)
	require.Equal(a.T, 201, r.Status, string(r.Body))
	return r.Obj(a.T)
}

func TestWidgetCalls(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newBrowserAPI(t, db, true)
		ctx := context.Background()

		t.Run("origin checks, every allowed-domain rule", func(t *testing.T) {
			w := a.World()
			a.Credit(w.Org.ID, 500)
			ag := a.Agent(w.OwnerK, "Web", nil)
			key := a.pk(w, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"shop.example.com", "*.apps.example.org"}})["key"].(string)
			cases := []struct {
				origin string
				status int
			}{
				{"https://shop.example.com", 201},      // exact host
				{"https://shop.example.com:8443", 201}, // the port does not matter
				{"https://www.shop.example.com", 403},  // exact means exact
				{"https://a.apps.example.org", 201},    // wildcard: a subdomain
				{"https://x.y.apps.example.org", 201},  // at any depth
				{"https://apps.example.org", 403},      // not the bare domain
				{"https://evilapps.example.org", 403},  // suffix without the dot
				{"http://localhost:3000", 201},         // always allowed
				{"http://127.0.0.1:8080", 201},         // always allowed
				{"https://foreign.example", 403},       // a foreign origin
				{"https://shop.example.com.evil.example", 403},
				{"null", 403},
				{"", 403},
			}
			for _, c := range cases {
				r := a.widgetCall(c.origin, key)
				require.Equal(t, c.status, r.Status, "origin %q: %s", c.origin, r.Body)
				if c.status == 403 {
					require.Contains(t, r.Obj(t)["detail"], "not allowed")
				} else {
					require.Equal(t, "answer", r.Obj(t)["type"])
				}
				if c.origin != "" {
					require.Equal(t, c.origin, r.Header.Get("Access-Control-Allow-Origin"), "the page can read the answer")
				}
			}
		})

		t.Run("a call: admitted as web, billed, events", func(t *testing.T) {
			w := a.World()
			a.Credit(w.Org.ID, 100)
			r := a.Do("POST", "/v1/developer/webhook-endpoints", w.AdminK, map[string]any{"label": "hooks", "url": "https://hooks.example/x", "events": []string{"web.incoming", "web.complete"}})
			require.Equal(t, 201, r.Status, string(r.Body))
			ep := r.Obj(t)["id"].(string)
			ag := a.Agent(w.OwnerK, "Front desk", map[string]any{"prompt": "Help visitors.", "product": "storm-base"})
			key := a.pk(w, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"shop.example"}})["key"].(string)

			r = a.widgetCall("https://shop.example", key)
			require.Equal(t, 201, r.Status, string(r.Body))
			out := r.Obj(t)
			require.Equal(t, "v=0 answer for v=0 offer", out["sdp"])
			require.Equal(t, float64(controltest.ID(ag)), out["agent_id"])
			require.Equal(t, float64(15*44+7), out["max_duration_seconds"], "100 cents at 9 per minute: 44 quarter minutes")
			cid := int64(out["call_id"].(float64))
			bc := a.media.last()
			require.Equal(t, cid, bc.CallID)
			require.Equal(t, "web", bc.Direction)
			require.Equal(t, "https://shop.example", bc.Origin)
			require.Equal(t, "Help visitors.", bc.Agent.Prompt)

			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.MembK, nil).Obj(t)
			require.Equal(t, "web", c["direction"])
			require.Equal(t, "in_progress", c["status"])
			require.Equal(t, "web:shop.example", c["from_number"])
			require.True(t, strings.HasPrefix(c["media_room_name"].(string), "widget-"))

			// The media side finishes it: billed, web.complete emitted.
			require.NoError(t, a.Srv.CallLog().Finish(ctx, cid, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: time.Now().Add(60 * time.Second)}))
			c = a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.MembK, nil).Obj(t)
			require.Equal(t, "completed", c["status"])
			require.Equal(t, float64(9), c["billing_total_cents"])
			ds, err := a.Store.Outbox.EndpointDeliveries(ctx, ep)
			require.NoError(t, err)
			require.Len(t, ds, 2)
			var types []string
			for _, d := range ds {
				o, err := a.Store.Outbox.ClaimDelivery(ctx, d.ID, time.Now(), time.Minute)
				require.NoError(t, err)
				types = append(types, o.Type)
			}
			require.Equal(t, []string{"web.incoming", "web.complete"}, types)
		})

		t.Run("refusals", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.OwnerK, "Web", nil)
			k := a.pk(w, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"shop.example"}})
			key := k["key"].(string)
			origin := "https://shop.example"

			r := a.widgetCall(origin, key)
			require.Equal(t, 402, r.Status, "no balance: %s", r.Body)
			a.Credit(w.Org.ID, 100)
			require.Equal(t, 401, a.widgetCall(origin, "pk_live_00000000000000000000000000000000").Status)
			require.Equal(t, 401, a.widgetCall(origin, "sk_live_abc").Status)
			r = a.Raw("POST", "/v1/widget/calls", map[string]string{"Origin": origin}, map[string]any{"publishable_key": key})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "sdp")
			r = a.Raw("POST", "/v1/widget/calls", map[string]string{"Origin": origin}, map[string]any{"sdp": "x"})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "publishable_key")

			path := fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(k))
			require.Equal(t, 200, a.Do("PATCH", path, w.AdminK, map[string]any{"is_enabled": false}).Status)
			r = a.widgetCall(origin, key)
			require.Equal(t, 403, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "turned off")
			require.Equal(t, 200, a.Do("PATCH", path, w.AdminK, map[string]any{"is_enabled": true}).Status)
			require.Equal(t, 201, a.widgetCall(origin, key).Status)

			// The media side refuses the offer: 400 on sdp, the call failed
			// and not charged.
			a.media.answer = func(string) (string, error) { return "", fmt.Errorf("pion says no: %w", browser.ErrBadOffer) }
			r = a.widgetCall(origin, key)
			require.Equal(t, 400, r.Status, string(r.Body))
			require.Contains(t, r.Obj(t), "sdp")
			failed := a.media.last().CallID
			c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", failed), w.MembK, nil).Obj(t)
			require.Equal(t, "failed", c["status"])
			require.Equal(t, "media_failed", c["end_reason"])
			require.Equal(t, float64(0), c["duration_seconds"])
			require.Nil(t, c["billing_total_cents"])
			a.media.answer = func(string) (string, error) { return "", errors.New("boom") }
			require.Equal(t, 500, a.widgetCall(origin, key).Status)
			a.media.answer = nil
			a.media.checkErr = browser.ErrMediaUnavailable
			require.Equal(t, 503, a.widgetCall(origin, key).Status)
			a.media.checkErr = nil

			// The agent deleted: the key has none.
			require.Equal(t, 204, a.Do("DELETE", fmt.Sprintf("/v1/agents/%d", controltest.ID(ag)), w.OwnerK, nil).Status)
			r = a.widgetCall(origin, key)
			require.Equal(t, 404, r.Status, string(r.Body))
			// Deactivated: like an unknown key.
			require.Equal(t, 204, a.Do("DELETE", path, w.AdminK, nil).Status)
			require.Equal(t, 401, a.widgetCall(origin, key).Status)

			// No media side at all.
			b := newBrowserAPI(t, db, false)
			w2 := b.World()
			b.Credit(w2.Org.ID, 100)
			ag2 := b.Agent(w2.OwnerK, "Web", nil)
			key2 := b.pk(w2, map[string]any{"agent_id": controltest.ID(ag2), "allowed_domains": []string{"shop.example"}})["key"].(string)
			require.Equal(t, 503, b.widgetCall(origin, key2).Status)
		})

		t.Run("webhook mode", func(t *testing.T) {
			w := a.World()
			a.Credit(w.Org.ID, 100)
			fallback := a.Agent(w.OwnerK, "Fallback", nil)
			chosen := a.Agent(w.OwnerK, "Chosen", map[string]any{"prompt": "Default prompt."})
			var mu sync.Mutex
			var got []map[string]any
			var sigs []string
			var bodies [][]byte
			answer := `{}`
			status := 200
			hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				var env map[string]any
				_ = json.Unmarshal(b, &env)
				mu.Lock()
				got = append(got, env)
				sigs = append(sigs, r.Header.Get("X-Service-Signature"))
				bodies = append(bodies, b)
				a, st := answer, status
				mu.Unlock()
				rw.WriteHeader(st)
				_, _ = rw.Write([]byte(a))
			}))
			defer hook.Close()
			legacy := a.Do("PUT", "/v1/webhook", w.AdminK, map[string]any{"url": "https://legacy.example/h"})
			require.Equal(t, 200, legacy.Status)
			secret := legacy.Obj(t)["secret"].(string)
			k := a.pk(w, map[string]any{"mode": "webhook", "webhook_url": strings.Replace(hook.URL, "127.0.0.1", "localhost", 1) + "/pick", "allowed_domains": []string{"shop.example"}})
			key := k["key"].(string)
			origin := "https://shop.example"

			answer = fmt.Sprintf(`{"agent_id": %d, "prompt": "Greet {{name}} warmly.", "first_message": "Hello {{ name }}!", "variables": {"name": "Ann"}, "metadata": {"cart": 3}}`, controltest.ID(chosen))
			r := a.widgetCall(origin, key)
			require.Equal(t, 201, r.Status, string(r.Body))
			require.Equal(t, float64(controltest.ID(chosen)), r.Obj(t)["agent_id"])
			bc := a.media.last()
			require.Equal(t, "Greet Ann warmly.", bc.Agent.Prompt)
			require.Equal(t, "Hello Ann!", *bc.Agent.FirstMessage)
			require.Equal(t, float64(3), bc.Metadata["cart"])
			mu.Lock()
			require.Equal(t, "web.incoming", got[0]["type"])
			data := got[0]["data"].(map[string]any)
			require.Equal(t, "web", data["direction"])
			require.Equal(t, "web:shop.example", data["from_number"])
			require.Equal(t, "widget:"+k["key_prefix"].(string), data["to_number"])
			require.Equal(t, webhook.Sign(secret, bodies[0]), sigs[0], "signed with the org's legacy secret")
			mu.Unlock()

			// Refusal, no agent named, agent of another org, failures.
			answer = `{"reject": true}`
			require.Equal(t, 403, a.widgetCall(origin, key).Status)
			answer = `{}`
			require.Equal(t, 502, a.widgetCall(origin, key).Status, "no agent named and no fallback")
			other := a.Agent(a.World().OwnerK, "Foreign", nil)
			answer = fmt.Sprintf(`{"agent_id": %d}`, controltest.ID(other))
			require.Equal(t, 404, a.widgetCall(origin, key).Status)
			status = 500
			require.Equal(t, 502, a.widgetCall(origin, key).Status, "the webhook failed and there is no fallback")
			// With a fallback agent the call goes on.
			require.Equal(t, 200, a.Do("PATCH", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(k)), w.AdminK, map[string]any{"agent_id": controltest.ID(fallback)}).Status)
			r = a.widgetCall(origin, key)
			require.Equal(t, 201, r.Status, string(r.Body))
			require.Equal(t, float64(controltest.ID(fallback)), r.Obj(t)["agent_id"])
			status, answer = 200, `{}`
			r = a.widgetCall(origin, key)
			require.Equal(t, 201, r.Status)
			require.Equal(t, float64(controltest.ID(fallback)), r.Obj(t)["agent_id"], "the webhook named none")
		})

		t.Run("rate limit per key and address", func(t *testing.T) {
			w := a.World()
			a.Credit(w.Org.ID, 1000)
			ag := a.Agent(w.OwnerK, "Web", nil)
			key := a.pk(w, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"shop.example"}})["key"].(string)
			for i := range 20 {
				require.Equal(t, 201, a.widgetCall("https://shop.example", key).Status, "call %d", i)
			}
			r := a.widgetCall("https://shop.example", key)
			require.Equal(t, 429, r.Status)
			require.Empty(t, r.Header.Get("Retry-After"))
		})

		t.Run("CORS preflight and assets", func(t *testing.T) {
			r := a.Raw("OPTIONS", "/v1/widget/calls", map[string]string{"Origin": "https://any.example", "Access-Control-Request-Method": "POST"}, nil)
			require.Equal(t, 204, r.Status)
			require.Equal(t, "https://any.example", r.Header.Get("Access-Control-Allow-Origin"))
			require.Contains(t, r.Header.Get("Access-Control-Allow-Methods"), "POST")
			require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), "Content-Type")
			r = a.Raw("GET", "/widget.js", nil, nil)
			require.Equal(t, 200, r.Status)
			require.Contains(t, r.Header.Get("Content-Type"), "javascript")
			require.Contains(t, string(r.Body), "/v1/widget/calls")
			r = a.Raw("GET", "/mic", nil, nil)
			require.Equal(t, 200, r.Status)
			require.Contains(t, string(r.Body), "/v1/mic-session")
		})
	})
}

func TestMicSessions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newBrowserAPI(t, db, true)
		ctx := context.Background()
		w := a.World()
		ag := a.Agent(w.OwnerK, "Tester", map[string]any{"product": "storm-pro"})

		require.Equal(t, 400, a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{}).Status)
		r := a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": "x"})
		require.Equal(t, 400, r.Status)
		require.Contains(t, r.Obj(t), "agent_id")
		require.Equal(t, 402, a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": controltest.ID(ag)}).Status)
		a.Credit(w.Org.ID, 100)
		require.Equal(t, 404, a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": 999999999}).Status)
		require.Equal(t, 404, a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": controltest.ID(a.Agent(a.World().OwnerK, "Other", nil))}).Status)
		require.Equal(t, 401, a.Do("POST", "/v1/mic-session", "", map[string]any{"agent_id": controltest.ID(ag)}).Status)
		a.media.checkErr = browser.ErrMediaUnavailable
		require.Equal(t, 502, a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": controltest.ID(ag)}).Status)
		a.media.checkErr = nil
		b := newBrowserAPI(t, db, false)
		require.Equal(t, 502, b.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": controltest.ID(ag)}).Status, "no media side")

		r = a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": controltest.ID(ag)})
		require.Equal(t, 200, r.Status, string(r.Body))
		ms := r.Obj(t)
		for _, f := range []string{"call_id", "token", "room_name", "server_url"} {
			require.NotEmpty(t, ms[f], f)
		}
		require.Equal(t, "https://voice.example/v1/mic-session/connect", ms["server_url"])
		cid := int64(ms["call_id"].(float64))
		c := a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.MembK, nil).Obj(t)
		require.Equal(t, "test", c["direction"])
		require.Equal(t, "in_progress", c["status"])
		require.Equal(t, "storm-pro", c["product"])
		require.Equal(t, ms["room_name"], c["media_room_name"])

		tok := ms["token"].(string)
		connect := func(token string) controltest.Resp {
			return a.Raw("POST", "/v1/mic-session/connect", nil, map[string]any{"token": token, "sdp": "v=0 mic offer"})
		}
		require.Equal(t, 401, connect("mic_1.2.3").Status)
		// Tamper inside the signature (its last character may carry only
		// padding bits) with a character that differs from the original.
		at, ch := len(tok)-5, "A"
		if tok[at:at+1] == ch {
			ch = "B"
		}
		require.Equal(t, 401, connect(tok[:at]+ch+tok[at+1:]).Status, "tampered")
		require.Equal(t, 401, connect(strings.Replace(tok, fmt.Sprint("mic_", cid), fmt.Sprint("mic_", cid+1), 1)).Status, "another call")
		require.Equal(t, 400, a.Raw("POST", "/v1/mic-session/connect", nil, map[string]any{"token": tok}).Status)
		r = connect(tok)
		require.Equal(t, 201, r.Status, string(r.Body))
		require.Equal(t, "v=0 answer for v=0 mic offer", r.Obj(t)["sdp"])
		bc := a.media.last()
		require.Equal(t, cid, bc.CallID)
		require.Equal(t, "test", bc.Direction)
		require.Equal(t, controltest.ID(ag), bc.AgentID)
		require.Equal(t, 409, connect(tok).Status, "single use")

		// Billed as a regular call at the agent's tier: 60 s of storm-pro.
		require.NoError(t, a.Srv.CallLog().Finish(ctx, cid, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: time.Now().Add(60 * time.Second)}))
		c = a.Do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.MembK, nil).Obj(t)
		require.Equal(t, float64(15), c["billing_total_cents"])
		require.Equal(t, 1.0, c["billable_minutes"])
		require.Equal(t, 409, connect(tok).Status, "ended")
	})
}
