package browser_test

import (
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// iceMedia is a media side whose node has a TURN server: it hands out
// credentials naming the id it was asked for.
type iceMedia struct {
	fakeMedia
	mu  sync.Mutex
	ids []string
	exp time.Time
}

func (m *iceMedia) ICEServers(id string) ([]browser.ICEServer, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids = append(m.ids, id)
	return []browser.ICEServer{{URLs: []string{"turn:turn.example:3478?transport=udp"}, Username: "1700000000:" + id, Credential: "pw-" + id}}, m.exp
}

func TestWidgetICEServers(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		m := &iceMedia{exp: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
		a := controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example", Webhooks: webhook.Config{AllowLoopback: true}}, control.WithBrowserMedia(m))
		b := &browserAPI{API: a}
		w := a.World()
		a.Credit(w.Org.ID, 500)
		ag := a.Agent(w.OwnerK, "Web", nil)
		pk := b.pk(w, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"shop.example.com"}})
		key, prefix := pk["key"].(string), pk["key_prefix"].(string)
		get := func(origin, key string) controltest.Resp {
			hdr := map[string]string{}
			if origin != "" {
				hdr["Origin"] = origin
			}
			return a.Raw("GET", "/v1/widget/ice-servers?publishable_key="+url.QueryEscape(key), hdr, nil)
		}

		r := get("https://shop.example.com", key)
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, "https://shop.example.com", r.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		body := r.Obj(t)
		require.Equal(t, []any{map[string]any{"urls": []any{"turn:turn.example:3478?transport=udp"},
			"username": "1700000000:" + prefix, "credential": "pw-" + prefix}}, body["ice_servers"])
		require.Equal(t, "2030-01-02T03:04:05.000Z", body["ice_servers_expire_at"])

		// The call's checks: the key, the Origin, the key turned off.
		require.Equal(t, 403, get("https://foreign.example", key).Status)
		require.Equal(t, 403, get("", key).Status)
		require.Equal(t, 401, get("https://shop.example.com", "pk_live_"+fmt.Sprintf("%032d", 0)).Status)
		require.Equal(t, 401, get("https://shop.example.com", "").Status)
		require.Equal(t, 200, a.Do("PATCH", fmt.Sprintf("/v1/publishable-key/%d", controltest.ID(pk)), w.AdminK, map[string]any{"is_enabled": false}).Status)
		require.Equal(t, 403, get("https://shop.example.com", key).Status)
		m.mu.Lock()
		require.Equal(t, []string{prefix}, m.ids, "credentials are made only for allowed requests")
		m.mu.Unlock()

		// Mic sessions carry them too, made for the call.
		r = a.Do("POST", "/v1/mic-session", w.MembK, map[string]any{"agent_id": controltest.ID(ag)})
		require.Equal(t, 200, r.Status, string(r.Body))
		ms := r.Obj(t)
		cid := int64(ms["call_id"].(float64))
		servers := ms["ice_servers"].([]any)
		require.Len(t, servers, 1)
		require.Equal(t, fmt.Sprintf("1700000000:call-%d", cid), servers[0].(map[string]any)["username"])

		// A node without STUN/TURN servers: an empty list, no expiry.
		plain := newBrowserAPI(t, db, true)
		key2 := plain.pk(w, map[string]any{"agent_id": controltest.ID(ag), "allowed_domains": []string{"shop.example.com"}})["key"].(string)
		r = plain.Raw("GET", "/v1/widget/ice-servers?publishable_key="+key2, map[string]string{"Origin": "http://localhost:3000"}, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, map[string]any{"ice_servers": []any{}, "ice_servers_expire_at": nil}, r.Obj(t))
	})
}
