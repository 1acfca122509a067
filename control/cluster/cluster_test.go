package cluster_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/cluster"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/sqltest"
)

const secret = "0123456789abcdef0123456789abcdef"

// plane is a real control plane (router, stores, call log) behind the
// internal API, and a media node's client of it.
type plane struct {
	api    *controltest.API
	local  cluster.Backend
	blobs  string
	spool  string
	url    string
	client *cluster.Client
	// fail503, while positive, makes the front answer 503 that many times.
	fail503 atomic.Int32
	hits    atomic.Int32
}

func newPlane(t *testing.T, db *storage.DB, opts ...control.Option) *plane {
	t.Helper()
	p := &plane{blobs: t.TempDir(), spool: t.TempDir()}
	p.api = controltest.NewWith(t, db, control.Config{PublicURL: "https://voice.example",
		Resources: control.ResourcesConfig{BlobDir: p.blobs, SigningKey: controltest.SigningKey}}, opts...)
	srv := p.api.Srv
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p.local = cluster.Backend{Calls: srv.CallLog(), Tools: webhook.NewExchanger(p.api.Store.Webhooks, true, time.Now, log),
		Credentials: srv.Realtime(), MCP: p.api.Store.MCPServers, Knowledge: srv.CallKnowledge()}
	h := cluster.NewServer(cluster.ServerConfig{Secret: secret, BlobDir: p.blobs}, p.local, log)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		if p.fail503.Add(-1) >= 0 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	p.url = front.URL
	var err error
	p.client, err = cluster.NewClient(cluster.ClientConfig{URL: front.URL, Secret: secret, SpoolDir: p.spool}, log)
	require.NoError(t, err)
	t.Cleanup(p.client.Close)
	return p
}

// TestRefusalsRoundTrip: every refusal the live call tells apart comes
// back from the API as the same error (errors.Is / the *api.Error with
// its Fields) and message as the in-process control plane gives.
func TestRefusalsRoundTrip(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		p := newPlane(t, db)
		ctx := context.Background()
		co := p.api.CallOrg("+14155550142")
		broke := p.api.World() // no credit
		ag := p.api.Agent(broke.OwnerK, "Broke", nil)
		noAgent := p.api.World()
		_, num := p.api.Trunk(noAgent, "+14155550143")
		_ = num

		cases := []struct {
			name string
			req  calllog.AdmitRequest
			want error
		}{
			{"unknown number", calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: "+19995550000", From: "+1415"}, calllog.ErrUnknownNumber},
			{"no agent", calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: "+14155550143", From: "+1415"}, calllog.ErrNoAgent},
			{"unknown agent", calllog.AdmitRequest{Direction: calllog.DirectionWeb, OrgID: co.Org.ID, AgentID: 999999}, calllog.ErrUnknownAgent},
			{"no balance", calllog.AdmitRequest{Direction: calllog.DirectionWeb, OrgID: broke.Org.ID, AgentID: controltest.ID(ag)}, calllog.ErrInsufficientBalance},
		}
		for _, tc := range cases {
			_, lerr := p.local.Calls.Admit(ctx, tc.req)
			_, rerr := p.client.Admit(ctx, tc.req)
			require.ErrorIs(t, lerr, tc.want, tc.name)
			require.ErrorIs(t, rerr, tc.want, tc.name)
			require.Equal(t, lerr.Error(), rerr.Error(), tc.name)
		}

		// A bad inline configuration: the same *api.Error, Fields and all.
		bad := json.RawMessage(`{"instructions": 5, "voice": {"x": 1}}`)
		_, lerr := p.local.Calls.AdmitInline(ctx, co.Org.ID, bad, "")
		_, rerr := p.client.AdmitInline(ctx, co.Org.ID, bad, "")
		var le, re *api.Error
		require.ErrorAs(t, lerr, &le)
		require.ErrorAs(t, rerr, &re)
		require.NotEmpty(t, le.Fields)
		require.Equal(t, le.Fields, re.Fields)
		require.Equal(t, le.Status, re.Status)

		// Realtime credentials.
		_, err := p.client.AuthenticateAPIKey(ctx, "sk_live_nope")
		require.ErrorIs(t, err, realtime.ErrInvalidCredential)
		org, err := p.client.AuthenticateAPIKey(ctx, strings.TrimPrefix(co.OwnerK, "Bearer "))
		require.NoError(t, err)
		require.Equal(t, co.Org.ID, org)
		_, err = p.client.ClaimRealtimeToken(ctx, "rt_forged")
		require.ErrorIs(t, err, realtime.ErrInvalidCredential)

		// A malformed end is ErrBadEvent on both sides.
		adm, err := p.client.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550199"})
		require.NoError(t, err)
		require.ErrorIs(t, p.client.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "exploded"}), calllog.ErrBadEvent)
	})
}

// TestCallThroughTheAPI: a call admitted, recorded (with a redelivered
// batch), its recording uploaded and the call finished and billed, all
// through the API, lands as the in-process path would land it.
func TestCallThroughTheAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		p := newPlane(t, db)
		ctx := context.Background()
		co := p.api.CallOrg("+14155550144")

		tr, ok, err := p.client.InboundTrunk(ctx, co.Number)
		require.NoError(t, err)
		require.True(t, ok)
		ltr, _, _ := p.local.Calls.InboundTrunk(ctx, co.Number)
		require.Equal(t, ltr, tr)
		_, ok, err = p.client.InboundTrunk(ctx, "+19995550001")
		require.NoError(t, err)
		require.False(t, ok)

		start := time.Now().Add(-31 * time.Second)
		adm, err := p.client.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550199", At: start})
		require.NoError(t, err)
		require.Equal(t, co.Org.ID, adm.OrgID)
		require.Equal(t, co.AgentID, adm.AgentID)
		require.Equal(t, "Answer for Acme Dental.", adm.Agent.Prompt)
		require.Greater(t, adm.MaxDuration, time.Duration(0))

		turn := calllog.CallEvent{ID: "turn-1", Kind: calllog.EventTurn, Role: "user", Text: "hello there", At: start.Add(time.Second)}
		// The first attempt meets a 503 and is retried: an event id makes
		// the redelivery harmless.
		p.fail503.Store(1)
		require.NoError(t, p.client.Append(ctx, adm.CallID, []calllog.CallEvent{turn}))
		require.NoError(t, p.client.Append(ctx, adm.CallID, []calllog.CallEvent{turn}))

		key := filepath.ToSlash(filepath.Join("recordings", "1", "rec.wav"))
		spooled := filepath.Join(p.spool, "recordings", "1", "rec.wav")
		require.NoError(t, os.MkdirAll(filepath.Dir(spooled), 0o700))
		require.NoError(t, os.WriteFile(spooled, []byte("RIFF-fake-wav-bytes"), 0o600))
		require.NoError(t, p.client.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: start.Add(31 * time.Second), RecordingKey: key}))
		got, err := os.ReadFile(filepath.Join(p.blobs, "recordings", "1", "rec.wav"))
		require.NoError(t, err, "the recording is in the control plane's blob store")
		require.Equal(t, "RIFF-fake-wav-bytes", string(got))
		_, err = os.Stat(spooled)
		require.ErrorIs(t, err, os.ErrNotExist, "the node keeps no copy")

		r := p.api.Do("GET", "/v1/calls/"+itoa(adm.CallID), co.OwnerK, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		c := r.Obj(t)
		require.Equal(t, "completed", c["status"])
		require.Equal(t, "blob://"+key, c["recording_url"])
		require.EqualValues(t, 31, c["duration_seconds"])
		require.EqualValues(t, 5, c["billing_total_cents"], "billed, 30 s at 9 cents a minute: %v", c)
		require.NotNil(t, c["billed_at"])
		tx, err := p.api.Store.Calls.CallEvents(ctx, []int64{adm.CallID}, calllog.EventTurn)
		require.NoError(t, err)
		require.Len(t, tx, 1, "the redelivered turn is recorded once")

		// A recording the node does not have ends the call without one
		// rather than naming a blob that is not there.
		adm2, err := p.client.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550198"})
		require.NoError(t, err)
		require.NoError(t, p.client.Finish(ctx, adm2.CallID, calllog.CallEnd{Status: "completed", Reason: "caller_hangup", RecordingKey: "recordings/1/missing.wav"}))
		c2 := p.api.Do("GET", "/v1/calls/"+itoa(adm2.CallID), co.OwnerK, nil).Obj(t)
		require.Equal(t, "completed", c2["status"])
		require.Nil(t, c2["recording_url"])

		// Finish is retried too, and applies once.
		p.fail503.Store(2)
		before := p.hits.Load()
		require.NoError(t, p.client.Finish(ctx, adm.CallID, calllog.CallEnd{Status: "completed", Reason: "caller_hangup"}))
		require.Equal(t, int32(3), p.hits.Load()-before)
		// Admission is not retried: a 503 reaches the caller.
		p.fail503.Store(1)
		before = p.hits.Load()
		_, err = p.client.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550199"})
		require.ErrorIs(t, err, cluster.ErrRemote)
		require.Equal(t, int32(1), p.hits.Load()-before)
	})
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// TestSecretIsRequired: no bearer is 401, a wrong one 403, and a server
// with no secret refuses even an empty-looking match; the client reports
// ErrAuth and does not retry.
func TestSecretIsRequired(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		p := newPlane(t, db)
		post := func(url, auth string) (int, string) {
			req, _ := http.NewRequest("POST", url+cluster.Prefix+"inbound-trunk", strings.NewReader(`{"number":"+1"}`))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(b)
		}
		st, body := post(p.url, "")
		require.Equal(t, 401, st)
		require.Contains(t, body, "cluster secret")
		st, _ = post(p.url, "Bearer "+strings.Repeat("x", len(secret)))
		require.Equal(t, 403, st)
		st, _ = post(p.url, "Bearer "+secret)
		require.Equal(t, 200, st)

		off := httptest.NewServer(cluster.NewServer(cluster.ServerConfig{BlobDir: t.TempDir()}, p.local, slog.Default()))
		defer off.Close()
		st, body = post(off.URL, "Bearer "+secret)
		require.Equal(t, 403, st)
		require.Contains(t, body, "no cluster secret")

		wrong, err := cluster.NewClient(cluster.ClientConfig{URL: p.url, Secret: "not-the-secret-not-the-secret-xx"}, slog.Default())
		require.NoError(t, err)
		before := p.hits.Load()
		_, _, err = wrong.InboundTrunk(context.Background(), "+1")
		require.ErrorIs(t, err, cluster.ErrAuth)
		require.Equal(t, int32(1), p.hits.Load()-before, "a refused secret is not retried")

		// Hostile input: a blob key out of the store, and a body that is
		// not JSON, are 400s that change nothing.
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, path := range []string{"blobs/../../etc/x", "blobs/recordings/../../x", "blobs//abs"} {
			req, _ := http.NewRequest("PUT", p.url+cluster.Prefix+path, strings.NewReader("x"))
			req.Header.Set("Authorization", "Bearer "+secret)
			res, err := noFollow.Do(req)
			require.NoError(t, err)
			res.Body.Close()
			require.Contains(t, []int{400, 301, 307, 308}, res.StatusCode, path)
		}
		req, _ := http.NewRequest("POST", p.url+cluster.Prefix+"append", strings.NewReader(`{"call_id":`))
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, 400, res.StatusCode)
		entries, _ := os.ReadDir(p.blobs)
		require.Empty(t, entries)
	})
}

// TestDialCommands: POST /v1/call on a control plane with the placed
// dialer reaches the node the placement picks as a sealed dial command
// (the trunk's password is not in it in the clear); a node with another
// cluster secret cannot open it and ends the call failed, dial_failed.
func TestDialCommands(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		local := coord.NewLocal(coord.Config{})
		defer local.Close()
		d := cluster.NewDialer(local, local, secret)
		p := newPlane(t, db, control.WithDialer(d))
		d.SetOwners(p.api.Srv.CallLog())
		co := p.api.CallOrg("+14155550145")
		require.NoError(t, local.Heartbeat(ctx, coord.Node{ID: "media-a", Addr: "127.0.0.1:1"}))
		raw, err := local.Commands(ctx, "media-a")
		require.NoError(t, err)
		defer raw.Close()
		dials := make(chan control.OutboundCall, 1)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		require.NoError(t, cluster.FollowDials(ctx, local, "media-a", secret, func(_ context.Context, o control.OutboundCall) error {
			dials <- o
			return nil
		}, p.client, log))

		r := p.api.Do("POST", "/v1/call", co.OwnerK, map[string]any{"agent_id": co.AgentID, "from_number": co.Number, "to_number": "+14155550123"})
		require.Equal(t, 201, r.Status, string(r.Body))
		id := controltest.ID(r.Obj(t))
		select {
		case o := <-dials:
			require.Equal(t, id, o.CallID)
			require.Equal(t, "s3cret-pass", o.Trunk.Password)
			require.Equal(t, "+14155550123", o.To)
		case <-time.After(10 * time.Second):
			t.Fatal("the node got no dial command")
		}
		placed, err := p.api.Store.Calls.CallByID(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "media-a", *placed.NodeID, "the call is recorded as the node's")
		cmd := <-raw.C()
		require.Equal(t, cluster.CommandDial, cmd.Type)
		require.NotContains(t, string(cmd.Data), "s3cret-pass", "the command is sealed")

		// A node with another secret: the call ends failed.
		require.NoError(t, local.Leave(ctx, "media-a"))
		require.NoError(t, local.Heartbeat(ctx, coord.Node{ID: "media-b", Addr: "127.0.0.1:2"}))
		require.NoError(t, cluster.FollowDials(ctx, local, "media-b", strings.Repeat("z", 32), func(context.Context, control.OutboundCall) error {
			t.Error("a command sealed with another secret was dialed")
			return nil
		}, p.client, log))
		r = p.api.Do("POST", "/v1/call", co.OwnerK, map[string]any{"agent_id": co.AgentID, "from_number": co.Number, "to_number": "+14155550124"})
		require.Equal(t, 201, r.Status, string(r.Body))
		id = controltest.ID(r.Obj(t))
		require.Eventually(t, func() bool {
			c := p.api.Do("GET", "/v1/calls/"+itoa(id), co.OwnerK, nil).Obj(t)
			return c["status"] == "failed" && c["end_reason"] == "dial_failed"
		}, 10*time.Second, 20*time.Millisecond)

		// No node at all: the call is refused at once (502), and failed.
		require.NoError(t, local.Leave(ctx, "media-b"))
		r = p.api.Do("POST", "/v1/call", co.OwnerK, map[string]any{"agent_id": co.AgentID, "from_number": co.Number, "to_number": "+14155550125"})
		require.Equal(t, 502, r.Status, string(r.Body))
	})
}
