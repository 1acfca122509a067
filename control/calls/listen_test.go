package calls_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/calltest"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// nodes stands in for the media nodes at the calls.Live boundary: it
// holds the calls in held (the live ones are exercised end to end in
// cmd/voiced).
type nodes struct {
	mu   sync.Mutex
	held map[int64]bool
}

func (n *nodes) Whisper(context.Context, int64, int64, string) error { return nil }

func (n *nodes) Listen(_ context.Context, _, callID int64) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.held[callID] {
		return "", calls.ErrNotLive
	}
	return "wss://media-1.example:8443", nil
}

// TestListenToken: POST /v1/calls/{id}/listen on SQLite and PostgreSQL:
// 200 with a token the nodes' key accepts (call, org and format signed
// into it, one minute), the URL of the node holding the call and the
// format's rate; the format from the body or the query (the body wins);
// 404 for an unknown or another org's call, 400 for a bad format or
// body, 409 for an ended call or one no node holds, 503 without nodes.
func TestListenToken(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		key := calls.ListenKey([]byte("cluster secret of the test, 32+ chars"))
		n := &nodes{held: map[int64]bool{}}
		a := controltest.NewResources(t, db, controltest.Pool, control.WithLive(n, key))
		o, other := a.CallOrg("+13105550400"), a.CallOrg("+13105550401")
		live := calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{To: o.Number, InProgress: true})
		n.held[live] = true
		unheld := calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{To: o.Number, InProgress: true})
		ended := calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{To: o.Number})
		path := func(id int64) string { return fmt.Sprintf("/v1/calls/%d/listen", id) }

		r := a.Do("POST", path(live), o.MembK, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		res := r.Obj(t)
		require.Equal(t, float64(live), res["call_id"])
		require.Equal(t, "pcm16", res["format"])
		require.Equal(t, float64(16000), res["sample_rate"])
		require.Equal(t, float64(1), res["channels"])
		require.Equal(t, float64(20), res["frame_ms"])
		require.Equal(t, float64(60), res["expires_in"])
		tok := res["token"].(string)
		g, err := calls.ParseListenToken(key, tok, time.Now())
		require.NoError(t, err)
		require.Equal(t, calls.ListenGrant{CallID: live, OrgID: o.Org.ID, Format: "pcm16", Expires: g.Expires}, g)
		require.WithinDuration(t, time.Now().Add(time.Minute), g.Expires, 2*time.Second)
		_, err = calls.ParseListenToken(key, tok, time.Now().Add(61*time.Second))
		require.ErrorIs(t, err, calls.ErrListenToken, "a minute later the token is refused")
		_, err = calls.ParseListenToken(calls.ListenKey([]byte("another secret")), tok, time.Now())
		require.ErrorIs(t, err, calls.ErrListenToken)
		require.Equal(t, fmt.Sprintf("wss://media-1.example:8443/v1/calls/%d/listen?token=%s", live, url.QueryEscape(tok)), res["url"])

		for _, c := range []struct {
			query string
			body  any
			want  string
		}{
			{"?format=g711_ulaw", nil, "g711_ulaw"},
			{"?format=audio%2Fpcmu", nil, "g711_ulaw"},
			{"", map[string]any{"format": "audio/pcma"}, "g711_alaw"},
			{"?format=g711_ulaw", map[string]any{"format": "pcm16"}, "pcm16"},
			{"", map[string]any{}, "pcm16"},
		} {
			r := a.Do("POST", path(live)+c.query, o.MembK, c.body)
			require.Equal(t, 200, r.Status, "%s %v: %s", c.query, c.body, r.Body)
			res := r.Obj(t)
			require.Equal(t, c.want, res["format"], "%s %v", c.query, c.body)
			require.Equal(t, float64(calls.ListenRate(c.want)), res["sample_rate"])
			g, err := calls.ParseListenToken(key, res["token"].(string), time.Now())
			require.NoError(t, err)
			require.Equal(t, c.want, g.Format, "the format is in the token")
		}

		for _, c := range []struct {
			query string
			body  any
		}{
			{"?format=mp3", nil}, {"", map[string]any{"format": "opus"}}, {"", map[string]any{"format": 5}}, {"", map[string]any{"format": ""}},
		} {
			r := a.Do("POST", path(live)+c.query, o.MembK, c.body)
			require.Equal(t, 400, r.Status, "%s %v: %s", c.query, c.body, r.Body)
			require.Contains(t, string(r.Body), "format")
		}
		require.Equal(t, 400, a.Do("POST", path(live), o.MembK, "[1]").Status)

		require.Equal(t, 404, a.Do("POST", path(999999999), o.MembK, nil).Status)
		require.Equal(t, 404, a.Do("POST", path(live), other.MembK, nil).Status, "another org's call")
		require.Equal(t, 401, a.Do("POST", path(live), "", nil).Status)
		r = a.Do("POST", path(ended), o.MembK, nil)
		require.Equal(t, 409, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), "ended")
		start := time.Now()
		r = a.Do("POST", path(unheld), o.MembK, nil)
		require.Equal(t, 409, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), "not live")
		require.GreaterOrEqual(t, time.Since(start), 2*time.Second, "refused only after the time a call's media takes to open")

		// A call in progress whose media opens on a node a moment after
		// the request came (its row is in progress from its admission).
		opening := calltest.Make(t, a.Srv.CallLog(), a.BlobDir, calltest.Spec{To: o.Number, InProgress: true})
		time.AfterFunc(300*time.Millisecond, func() {
			n.mu.Lock()
			n.held[opening] = true
			n.mu.Unlock()
		})
		r = a.Do("POST", path(opening), o.MembK, nil)
		require.Equal(t, 200, r.Status, string(r.Body))

		// This server serves no socket (nothing mounted): the GET says
		// where to go instead.
		r = a.Do("GET", path(live)+"?token="+url.QueryEscape(tok), "", nil)
		require.Equal(t, 503, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), "url")

		// No nodes at all.
		b := controltest.NewResources(t, db, controltest.Pool)
		ob := b.CallOrg("+13105550402")
		id := calltest.Make(t, b.Srv.CallLog(), b.BlobDir, calltest.Spec{To: ob.Number, InProgress: true})
		r = b.Do("POST", path(id), ob.MembK, nil)
		require.Equal(t, 503, r.Status, string(r.Body))
		require.True(t, strings.Contains(string(r.Body), "No node"), string(r.Body))
	})
}
