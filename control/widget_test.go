package control_test

import (
	"bytes"
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

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/calllog"
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
	*api
	media *fakeMedia
}

func newBrowserAPI(t *testing.T, db *storage.DB, withMedia bool) *browserAPI {
	m := &fakeMedia{}
	var opts []control.Option
	if withMedia {
		opts = append(opts, control.WithBrowserMedia(m))
	}
	a := newAPIWith(t, db, control.Config{PublicURL: "https://voice.example", Webhooks: webhook.Config{AllowLoopback: true}}, opts...)
	return &browserAPI{api: a, media: m}
}

// raw sends a request with extra headers.
func (a *api) raw(method, path string, hdr map[string]string, body any) resp {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		require.NoError(a.t, err)
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := a.srv.App().Test(req, fiber.TestConfig{Timeout: 30 * time.Second})
	require.NoError(a.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	return resp{status: res.StatusCode, body: b, header: res.Header}
}

func (a *browserAPI) widgetCall(origin, key string) resp {
	a.t.Helper()
	hdr := map[string]string{}
	if origin != "" {
		hdr["Origin"] = origin
	}
	return a.raw("POST", "/v1/widget/calls", hdr, map[string]any{"publishable_key": key, "sdp": "v=0 offer"})
}

func (a *browserAPI) pk(w world, body map[string]any) map[string]any {
	a.t.Helper()
	r := a.do("POST", "/v1/publishable-key", w.adminK, body)
	require.Equal(a.t, 201, r.status, string(r.body))
	return r.obj(a.t)
}

func TestWidgetCalls(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newBrowserAPI(t, db, true)
		ctx := context.Background()

		t.Run("origin checks, every allowed-domain rule", func(t *testing.T) {
			w := a.world()
			a.credit(w.org.ID, 500)
			ag := a.agent(w.ownerK, "Web", nil)
			key := a.pk(w, map[string]any{"agent_id": id(ag), "allowed_domains": []string{"shop.example.com", "*.apps.example.org"}})["key"].(string)
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
				require.Equal(t, c.status, r.status, "origin %q: %s", c.origin, r.body)
				if c.status == 403 {
					require.Contains(t, r.obj(t)["detail"], "not allowed")
				} else {
					require.Equal(t, "answer", r.obj(t)["type"])
				}
				if c.origin != "" {
					require.Equal(t, c.origin, r.header.Get("Access-Control-Allow-Origin"), "the page can read the answer")
				}
			}
		})

		t.Run("a call: admitted as web, billed, events", func(t *testing.T) {
			w := a.world()
			a.credit(w.org.ID, 100)
			r := a.do("POST", "/v1/developer/webhook-endpoints", w.adminK, map[string]any{"label": "hooks", "url": "https://hooks.example/x", "events": []string{"web.incoming", "web.complete"}})
			require.Equal(t, 201, r.status, string(r.body))
			ep := r.obj(t)["id"].(string)
			ag := a.agent(w.ownerK, "Front desk", map[string]any{"prompt": "Help visitors.", "product": "storm-base"})
			key := a.pk(w, map[string]any{"agent_id": id(ag), "allowed_domains": []string{"shop.example"}})["key"].(string)

			r = a.widgetCall("https://shop.example", key)
			require.Equal(t, 201, r.status, string(r.body))
			out := r.obj(t)
			require.Equal(t, "v=0 answer for v=0 offer", out["sdp"])
			require.Equal(t, float64(id(ag)), out["agent_id"])
			require.Equal(t, float64(15*44+7), out["max_duration_seconds"], "100 cents at 9 per minute: 44 quarter minutes")
			cid := int64(out["call_id"].(float64))
			bc := a.media.last()
			require.Equal(t, cid, bc.CallID)
			require.Equal(t, "web", bc.Direction)
			require.Equal(t, "https://shop.example", bc.Origin)
			require.Equal(t, "Help visitors.", bc.Agent.Prompt)

			c := a.do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.membK, nil).obj(t)
			require.Equal(t, "web", c["direction"])
			require.Equal(t, "in_progress", c["status"])
			require.Equal(t, "web:shop.example", c["from_number"])
			require.True(t, strings.HasPrefix(c["media_room_name"].(string), "widget-"))

			// The media side finishes it: billed, web.complete emitted.
			require.NoError(t, a.srv.CallLog().Finish(ctx, cid, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: time.Now().Add(60 * time.Second)}))
			c = a.do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.membK, nil).obj(t)
			require.Equal(t, "completed", c["status"])
			require.Equal(t, float64(9), c["billing_total_cents"])
			ds, err := a.store.Outbox.EndpointDeliveries(ctx, ep)
			require.NoError(t, err)
			require.Len(t, ds, 2)
			var types []string
			for _, d := range ds {
				o, err := a.store.Outbox.ClaimDelivery(ctx, d.ID, time.Now(), time.Minute)
				require.NoError(t, err)
				types = append(types, o.Type)
			}
			require.Equal(t, []string{"web.incoming", "web.complete"}, types)
		})

		t.Run("refusals", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.ownerK, "Web", nil)
			k := a.pk(w, map[string]any{"agent_id": id(ag), "allowed_domains": []string{"shop.example"}})
			key := k["key"].(string)
			origin := "https://shop.example"

			r := a.widgetCall(origin, key)
			require.Equal(t, 402, r.status, "no balance: %s", r.body)
			a.credit(w.org.ID, 100)
			require.Equal(t, 401, a.widgetCall(origin, "pk_live_00000000000000000000000000000000").status)
			require.Equal(t, 401, a.widgetCall(origin, "sk_live_abc").status)
			r = a.raw("POST", "/v1/widget/calls", map[string]string{"Origin": origin}, map[string]any{"publishable_key": key})
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t), "sdp")
			r = a.raw("POST", "/v1/widget/calls", map[string]string{"Origin": origin}, map[string]any{"sdp": "x"})
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t), "publishable_key")

			path := fmt.Sprintf("/v1/publishable-key/%d", id(k))
			require.Equal(t, 200, a.do("PATCH", path, w.adminK, map[string]any{"is_enabled": false}).status)
			r = a.widgetCall(origin, key)
			require.Equal(t, 403, r.status)
			require.Contains(t, r.obj(t)["detail"], "turned off")
			require.Equal(t, 200, a.do("PATCH", path, w.adminK, map[string]any{"is_enabled": true}).status)
			require.Equal(t, 201, a.widgetCall(origin, key).status)

			// The media side refuses the offer: 400 on sdp, the call failed
			// and not charged.
			a.media.answer = func(string) (string, error) { return "", fmt.Errorf("pion says no: %w", browser.ErrBadOffer) }
			r = a.widgetCall(origin, key)
			require.Equal(t, 400, r.status, string(r.body))
			require.Contains(t, r.obj(t), "sdp")
			failed := a.media.last().CallID
			c := a.do("GET", fmt.Sprintf("/v1/calls/%d", failed), w.membK, nil).obj(t)
			require.Equal(t, "failed", c["status"])
			require.Equal(t, "media_failed", c["end_reason"])
			require.Equal(t, float64(0), c["duration_seconds"])
			require.Nil(t, c["billing_total_cents"])
			a.media.answer = func(string) (string, error) { return "", errors.New("boom") }
			require.Equal(t, 500, a.widgetCall(origin, key).status)
			a.media.answer = nil
			a.media.checkErr = browser.ErrMediaUnavailable
			require.Equal(t, 503, a.widgetCall(origin, key).status)
			a.media.checkErr = nil

			// The agent deleted: the key has none.
			require.Equal(t, 204, a.do("DELETE", fmt.Sprintf("/v1/agents/%d", id(ag)), w.ownerK, nil).status)
			r = a.widgetCall(origin, key)
			require.Equal(t, 404, r.status, string(r.body))
			// Deactivated: like an unknown key.
			require.Equal(t, 204, a.do("DELETE", path, w.adminK, nil).status)
			require.Equal(t, 401, a.widgetCall(origin, key).status)

			// No media side at all.
			b := newBrowserAPI(t, db, false)
			w2 := b.world()
			b.credit(w2.org.ID, 100)
			ag2 := b.agent(w2.ownerK, "Web", nil)
			key2 := b.pk(w2, map[string]any{"agent_id": id(ag2), "allowed_domains": []string{"shop.example"}})["key"].(string)
			require.Equal(t, 503, b.widgetCall(origin, key2).status)
		})

		t.Run("webhook mode", func(t *testing.T) {
			w := a.world()
			a.credit(w.org.ID, 100)
			fallback := a.agent(w.ownerK, "Fallback", nil)
			chosen := a.agent(w.ownerK, "Chosen", map[string]any{"prompt": "Default prompt."})
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
			legacy := a.do("PUT", "/v1/webhook", w.adminK, map[string]any{"url": "https://legacy.example/h"})
			require.Equal(t, 200, legacy.status)
			secret := legacy.obj(t)["secret"].(string)
			k := a.pk(w, map[string]any{"mode": "webhook", "webhook_url": strings.Replace(hook.URL, "127.0.0.1", "localhost", 1) + "/pick", "allowed_domains": []string{"shop.example"}})
			key := k["key"].(string)
			origin := "https://shop.example"

			answer = fmt.Sprintf(`{"agent_id": %d, "prompt": "Greet {{name}} warmly.", "first_message": "Hello {{ name }}!", "variables": {"name": "Ann"}, "metadata": {"cart": 3}}`, id(chosen))
			r := a.widgetCall(origin, key)
			require.Equal(t, 201, r.status, string(r.body))
			require.Equal(t, float64(id(chosen)), r.obj(t)["agent_id"])
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
			require.Equal(t, 403, a.widgetCall(origin, key).status)
			answer = `{}`
			require.Equal(t, 502, a.widgetCall(origin, key).status, "no agent named and no fallback")
			other := a.agent(a.world().ownerK, "Foreign", nil)
			answer = fmt.Sprintf(`{"agent_id": %d}`, id(other))
			require.Equal(t, 404, a.widgetCall(origin, key).status)
			status = 500
			require.Equal(t, 502, a.widgetCall(origin, key).status, "the webhook failed and there is no fallback")
			// With a fallback agent the call goes on.
			require.Equal(t, 200, a.do("PATCH", fmt.Sprintf("/v1/publishable-key/%d", id(k)), w.adminK, map[string]any{"agent_id": id(fallback)}).status)
			r = a.widgetCall(origin, key)
			require.Equal(t, 201, r.status, string(r.body))
			require.Equal(t, float64(id(fallback)), r.obj(t)["agent_id"])
			status, answer = 200, `{}`
			r = a.widgetCall(origin, key)
			require.Equal(t, 201, r.status)
			require.Equal(t, float64(id(fallback)), r.obj(t)["agent_id"], "the webhook named none")
		})

		t.Run("rate limit per key and address", func(t *testing.T) {
			w := a.world()
			a.credit(w.org.ID, 1000)
			ag := a.agent(w.ownerK, "Web", nil)
			key := a.pk(w, map[string]any{"agent_id": id(ag), "allowed_domains": []string{"shop.example"}})["key"].(string)
			for i := range 20 {
				require.Equal(t, 201, a.widgetCall("https://shop.example", key).status, "call %d", i)
			}
			r := a.widgetCall("https://shop.example", key)
			require.Equal(t, 429, r.status)
			require.Empty(t, r.header.Get("Retry-After"))
		})

		t.Run("CORS preflight and assets", func(t *testing.T) {
			r := a.raw("OPTIONS", "/v1/widget/calls", map[string]string{"Origin": "https://any.example", "Access-Control-Request-Method": "POST"}, nil)
			require.Equal(t, 204, r.status)
			require.Equal(t, "https://any.example", r.header.Get("Access-Control-Allow-Origin"))
			require.Contains(t, r.header.Get("Access-Control-Allow-Methods"), "POST")
			require.Contains(t, r.header.Get("Access-Control-Allow-Headers"), "Content-Type")
			r = a.raw("GET", "/widget.js", nil, nil)
			require.Equal(t, 200, r.status)
			require.Contains(t, r.header.Get("Content-Type"), "javascript")
			require.Contains(t, string(r.body), "/v1/widget/calls")
			r = a.raw("GET", "/mic", nil, nil)
			require.Equal(t, 200, r.status)
			require.Contains(t, string(r.body), "/v1/mic-session")
		})
	})
}

func TestMicSessions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newBrowserAPI(t, db, true)
		ctx := context.Background()
		w := a.world()
		ag := a.agent(w.ownerK, "Tester", map[string]any{"product": "storm-pro"})

		require.Equal(t, 400, a.do("POST", "/v1/mic-session", w.membK, map[string]any{}).status)
		r := a.do("POST", "/v1/mic-session", w.membK, map[string]any{"agent_id": "x"})
		require.Equal(t, 400, r.status)
		require.Contains(t, r.obj(t), "agent_id")
		require.Equal(t, 402, a.do("POST", "/v1/mic-session", w.membK, map[string]any{"agent_id": id(ag)}).status)
		a.credit(w.org.ID, 100)
		require.Equal(t, 404, a.do("POST", "/v1/mic-session", w.membK, map[string]any{"agent_id": 999999999}).status)
		require.Equal(t, 404, a.do("POST", "/v1/mic-session", w.membK, map[string]any{"agent_id": id(a.agent(a.world().ownerK, "Other", nil))}).status)
		require.Equal(t, 401, a.do("POST", "/v1/mic-session", "", map[string]any{"agent_id": id(ag)}).status)
		a.media.checkErr = browser.ErrMediaUnavailable
		require.Equal(t, 502, a.do("POST", "/v1/mic-session", w.membK, map[string]any{"agent_id": id(ag)}).status)
		a.media.checkErr = nil
		b := newBrowserAPI(t, db, false)
		require.Equal(t, 502, b.do("POST", "/v1/mic-session", w.membK, map[string]any{"agent_id": id(ag)}).status, "no media side")

		r = a.do("POST", "/v1/mic-session", w.membK, map[string]any{"agent_id": id(ag)})
		require.Equal(t, 200, r.status, string(r.body))
		ms := r.obj(t)
		for _, f := range []string{"call_id", "token", "room_name", "server_url"} {
			require.NotEmpty(t, ms[f], f)
		}
		require.Equal(t, "https://voice.example/v1/mic-session/connect", ms["server_url"])
		cid := int64(ms["call_id"].(float64))
		c := a.do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.membK, nil).obj(t)
		require.Equal(t, "test", c["direction"])
		require.Equal(t, "in_progress", c["status"])
		require.Equal(t, "storm-pro", c["product"])
		require.Equal(t, ms["room_name"], c["media_room_name"])

		tok := ms["token"].(string)
		connect := func(token string) resp {
			return a.raw("POST", "/v1/mic-session/connect", nil, map[string]any{"token": token, "sdp": "v=0 mic offer"})
		}
		require.Equal(t, 401, connect("mic_1.2.3").status)
		// Tamper inside the signature (its last character may carry only
		// padding bits) with a character that differs from the original.
		at, ch := len(tok)-5, "A"
		if tok[at:at+1] == ch {
			ch = "B"
		}
		require.Equal(t, 401, connect(tok[:at]+ch+tok[at+1:]).status, "tampered")
		require.Equal(t, 401, connect(strings.Replace(tok, fmt.Sprint("mic_", cid), fmt.Sprint("mic_", cid+1), 1)).status, "another call")
		require.Equal(t, 400, a.raw("POST", "/v1/mic-session/connect", nil, map[string]any{"token": tok}).status)
		r = connect(tok)
		require.Equal(t, 201, r.status, string(r.body))
		require.Equal(t, "v=0 answer for v=0 mic offer", r.obj(t)["sdp"])
		bc := a.media.last()
		require.Equal(t, cid, bc.CallID)
		require.Equal(t, "test", bc.Direction)
		require.Equal(t, id(ag), bc.AgentID)
		require.Equal(t, 409, connect(tok).status, "single use")

		// Billed as a regular call at the agent's tier: 60 s of storm-pro.
		require.NoError(t, a.srv.CallLog().Finish(ctx, cid, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: time.Now().Add(60 * time.Second)}))
		c = a.do("GET", fmt.Sprintf("/v1/calls/%d", cid), w.membK, nil).obj(t)
		require.Equal(t, float64(15), c["billing_total_cents"])
		require.Equal(t, 1.0, c["billable_minutes"])
		require.Equal(t, 409, connect(tok).status, "ended")
	})
}
