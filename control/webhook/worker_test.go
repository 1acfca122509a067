package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// fakeClock is the injected clock of the store and the worker.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

var testKey = bytes.Repeat([]byte{3}, 32)

func newStore(t testing.TB, db *storage.DB, now func() time.Time) *storage.Store {
	t.Helper()
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: testKey, Now: now})
	require.NoError(t, err)
	return s
}

func newOrg(t testing.TB, s *storage.Store) int64 {
	t.Helper()
	ctx := context.Background()
	u, err := s.Orgs.CreateUser(ctx, "hooks-"+storage.NewUUID()+"@example.com", "H", "Ooks")
	require.NoError(t, err)
	o, err := s.Orgs.CreateOrg(ctx, u.ID, "Hooks")
	require.NoError(t, err)
	return o.ID
}

// request is what a receiver saw, after it verified both signatures the
// way a receiver would: from the raw body, in constant time.
type request struct {
	body      map[string]any
	eventID   string // webhook-id header
	timestamp int64  // webhook-timestamp header
	sigOK     bool   // X-Service-Signature verified
	stdSigOK  bool   // webhook-signature verified
}

// receiver is a real HTTP server on loopback that answers with status()
// and records every request.
type receiver struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	reqs   []request
	status func(n int) int // n counts requests from 1
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		got := request{eventID: req.Header.Get("webhook-id")}
		got.timestamp, _ = strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
		_ = json.Unmarshal(raw, &got.body)
		r.mu.Lock()
		secret := r.secret
		r.mu.Unlock()
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(raw)
		want := mac.Sum(nil)
		sig, err := hex.DecodeString(req.Header.Get("X-Service-Signature"))
		got.sigOK = err == nil && hmac.Equal(sig, want)
		// Standard Webhooks: key = base64(secret without whsec_), content
		// = id.timestamp.body, header "v1,<base64>".
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		smac := hmac.New(sha256.New, key)
		smac.Write([]byte(req.Header.Get("webhook-id") + "." + req.Header.Get("webhook-timestamp") + "."))
		smac.Write(raw)
		v, ok := strings.CutPrefix(req.Header.Get("webhook-signature"), "v1,")
		std, err := base64.StdEncoding.DecodeString(v)
		got.stdSigOK = ok && err == nil && hmac.Equal(std, smac.Sum(nil))
		r.mu.Lock()
		r.reqs = append(r.reqs, got)
		n := len(r.reqs)
		r.mu.Unlock()
		if !got.sigOK || !got.stdSigOK {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(r.status(n))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setSecret(s string) { r.mu.Lock(); r.secret = s; r.mu.Unlock() }
func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

// specSchedule is spec section 8: immediately, then 1 m, 5 m, 30 m, 2 h,
// 6 h, 12 h and 24 h after the first attempt.
var specSchedule = []time.Duration{0, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

func always(code int) func(int) int { return func(int) int { return code } }

func TestDeliverySchedule(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clk := &fakeClock{t: time.Now().Truncate(time.Second)}
		s := newStore(t, db, clk.Now)
		org := newOrg(t, s)
		w, err := webhook.New(webhook.Config{AllowLoopback: true, Now: clk.Now}, nil, s.Outbox)
		require.NoError(t, err)

		down := newReceiver(t, always(http.StatusServiceUnavailable))
		up := newReceiver(t, always(http.StatusNoContent))
		epDown, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "down", down.URL+"/hook", nil)
		require.NoError(t, err)
		epUp, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "up", up.URL+"/hook", []string{"call.graded"})
		require.NoError(t, err)
		down.setSecret(epDown.Secret)
		up.setSecret(epUp.Secret)

		ev, err := s.Outbox.Emit(ctx, org, "call.graded", map[string]any{"call_id": 42, "score": 91})
		require.NoError(t, err)
		t0 := clk.Now()

		n, err := w.DeliverDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n, "the first attempt goes to both endpoints immediately")

		// Walk the spec's schedule: nothing one second early, one attempt on time.
		for k := 1; k < len(specSchedule); k++ {
			clk.Set(t0.Add(specSchedule[k] - time.Second))
			n, err = w.DeliverDue(ctx)
			require.NoError(t, err)
			require.Zero(t, n, "attempt %d must not be early", k+1)
			clk.Set(t0.Add(specSchedule[k]))
			n, err = w.DeliverDue(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n, "attempt %d", k+1)
		}
		clk.Set(t0.Add(48 * time.Hour))
		n, err = w.DeliverDue(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "there is no ninth attempt")

		reqs := down.requests()
		require.Len(t, reqs, 8)
		for k, r := range reqs {
			require.Equal(t, t0.Add(specSchedule[k]).Unix(), r.timestamp, "attempt %d time", k+1)
			require.Equal(t, ev.ID, r.eventID)
			require.Equal(t, ev.ID, r.body["event_id"], "same event_id on every attempt")
			require.Equal(t, "call.graded", r.body["type"])
			require.Equal(t, map[string]any{"call_id": float64(42), "score": float64(91)}, r.body["data"])
			require.True(t, r.sigOK && r.stdSigOK, "receiver-side signature check, attempt %d", k+1)
		}
		ureqs := up.requests()
		require.Len(t, ureqs, 1)
		require.Equal(t, ev.ID, ureqs[0].body["event_id"], "same event_id on every endpoint")

		ds, err := s.Outbox.EventDeliveries(ctx, ev.ID)
		require.NoError(t, err)
		require.Equal(t, storage.DeliveryFailed, ds[0].Status)
		require.Equal(t, 8, ds[0].Attempts)
		require.Equal(t, 503, ds[0].LastStatusCode)
		require.Equal(t, storage.DeliveryDelivered, ds[1].Status)
		require.Equal(t, w.Stats(), webhook.Stats{Attempts: 9, Delivered: 1, Failed: 1})

		got, err := s.Webhooks.WebhookEndpoint(ctx, org, epDown.ID)
		require.NoError(t, err)
		require.Equal(t, storage.EndpointFailing, got.Status, "failing after 8")
		got, _ = s.Webhooks.WebhookEndpoint(ctx, org, epUp.ID)
		require.Equal(t, storage.EndpointActive, got.Status)

		// A failing endpoint gets no traffic; its new events wait.
		ev2, err := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{"n": 2})
		require.NoError(t, err)
		n, err = w.DeliverDue(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Len(t, down.requests(), 8)

		// The receiver is fixed; PATCH active resumes the pending retries.
		down.status = always(http.StatusOK)
		active := storage.EndpointActive
		_, err = s.Webhooks.UpdateWebhookEndpoint(ctx, org, epDown.ID, storage.EndpointPatch{Status: &active})
		require.NoError(t, err)
		n, err = w.DeliverDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		reqs = down.requests()
		require.Len(t, reqs, 9)
		require.Equal(t, ev2.ID, reqs[8].body["event_id"])
		ds, _ = s.Outbox.EventDeliveries(ctx, ev2.ID)
		require.Equal(t, storage.DeliveryDelivered, ds[0].Status)

		// Disabled is the user's: the server never changes it, and nothing
		// is created or sent for it.
		disabled := storage.EndpointDisabled
		_, err = s.Webhooks.UpdateWebhookEndpoint(ctx, org, epDown.ID, storage.EndpointPatch{Status: &disabled})
		require.NoError(t, err)
		ev3, _ := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{"n": 3})
		ds, _ = s.Outbox.EventDeliveries(ctx, ev3.ID)
		require.Empty(t, ds)
	})
}

func TestDeliveryEdges(t *testing.T) {
	db := sqltest.New(t, "sqlite")
	ctx := context.Background()
	clk := &fakeClock{t: time.Now()}
	s := newStore(t, db, clk.Now)

	t.Run("legacy URL: one attempt, no event_id, legacy secret", func(t *testing.T) {
		org := newOrg(t, s)
		w, _ := webhook.New(webhook.Config{AllowLoopback: true, Now: clk.Now}, nil, s.Outbox)
		rcv := newReceiver(t, always(http.StatusInternalServerError))
		wh, err := s.Webhooks.SetWebhook(ctx, org, rcv.URL, false)
		require.NoError(t, err)
		rcv.setSecret(wh.Secret)
		ev, err := s.Outbox.Emit(ctx, org, "telephony.complete", map[string]any{"call_id": 1})
		require.NoError(t, err)
		_, err = w.DeliverDue(ctx)
		require.NoError(t, err)
		clk.Set(clk.Now().Add(time.Hour))
		n, _ := w.DeliverDue(ctx)
		require.Zero(t, n, "the legacy URL gets a single attempt")
		reqs := rcv.requests()
		require.Len(t, reqs, 1)
		require.True(t, reqs[0].sigOK && reqs[0].stdSigOK)
		require.NotContains(t, reqs[0].body, "event_id")
		require.Equal(t, "telephony.complete", reqs[0].body["type"])
		ds, _ := s.Outbox.EventDeliveries(ctx, ev.ID)
		require.Equal(t, storage.DeliveryFailed, ds[0].Status)
	})

	t.Run("redirects are not followed", func(t *testing.T) {
		org := newOrg(t, s)
		w, _ := webhook.New(webhook.Config{AllowLoopback: true, Now: clk.Now}, nil, s.Outbox)
		target := newReceiver(t, always(200))
		hop := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			http.Redirect(rw, r, target.URL, http.StatusTemporaryRedirect)
		}))
		defer hop.Close()
		_, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "hop", hop.URL, nil)
		require.NoError(t, err)
		ev, _ := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{})
		_, err = w.DeliverDue(ctx)
		require.NoError(t, err)
		require.Empty(t, target.requests())
		ds, _ := s.Outbox.EventDeliveries(ctx, ev.ID)
		require.Equal(t, storage.DeliveryPending, ds[0].Status)
		require.Equal(t, 307, ds[0].LastStatusCode)
	})

	t.Run("loopback needs the operator's switch", func(t *testing.T) {
		org := newOrg(t, s)
		w, _ := webhook.New(webhook.Config{Now: clk.Now}, nil, s.Outbox)
		rcv := newReceiver(t, always(200))
		_, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "local", rcv.URL, nil)
		require.NoError(t, err)
		ev, _ := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{})
		_, err = w.DeliverDue(ctx)
		require.NoError(t, err)
		require.Empty(t, rcv.requests())
		ds, _ := s.Outbox.EventDeliveries(ctx, ev.ID)
		require.Equal(t, "destination address is not public", ds[0].LastError)

		// "localhost" by name works once allowed.
		w2, _ := webhook.New(webhook.Config{AllowLoopback: true, Now: clk.Now}, nil, s.Outbox)
		rcv2 := newReceiver(t, always(200))
		e2, _ := s.Webhooks.CreateWebhookEndpoint(ctx, org, "localhost", strings.Replace(rcv2.URL, "127.0.0.1", "localhost", 1), nil)
		rcv2.setSecret(e2.Secret)
		clk.Set(clk.Now().Add(2 * time.Minute)) // the first endpoint's retry is due too
		_, err = w2.DeliverDue(ctx)
		require.NoError(t, err)
		require.Len(t, rcv2.requests(), 0, "no event yet for the new endpoint")
		ev2, _ := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{})
		_, err = w2.DeliverDue(ctx)
		require.NoError(t, err)
		require.Len(t, rcv2.requests(), 1)
		require.Equal(t, ev2.ID, rcv2.requests()[0].eventID)
	})

	t.Run("an attempt is bounded by the timeout", func(t *testing.T) {
		org := newOrg(t, s)
		w, _ := webhook.New(webhook.Config{AllowLoopback: true, Now: clk.Now, Timeout: 150 * time.Millisecond}, nil, s.Outbox)
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		defer slow.Close()
		defer close(release)
		_, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "slow", slow.URL, nil)
		require.NoError(t, err)
		ev, _ := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{})
		start := time.Now()
		_, err = w.DeliverDue(ctx)
		require.NoError(t, err)
		require.Less(t, time.Since(start), 5*time.Second)
		ds, _ := s.Outbox.EventDeliveries(ctx, ev.ID)
		require.Equal(t, storage.DeliveryPending, ds[0].Status)
		require.Equal(t, 1, ds[0].Attempts)
		require.Contains(t, ds[0].LastError, "timed out")
	})
}

func TestRunDeliversPromptly(t *testing.T) {
	db := sqltest.New(t, "sqlite")
	ctx, cancel := context.WithCancel(context.Background())
	s := newStore(t, db, nil)
	org := newOrg(t, s)
	rcv := newReceiver(t, always(200))
	e, _ := s.Webhooks.CreateWebhookEndpoint(ctx, org, "r", rcv.URL, nil)
	rcv.setSecret(e.Secret)
	w, err := webhook.New(webhook.Config{AllowLoopback: true, Poll: time.Hour}, nil, s.Outbox)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for range 5 {
		_, err := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{})
		require.NoError(t, err)
	}
	w.Notify() // an hour-long poll: only the notification can deliver these
	require.Eventually(t, func() bool { return len(rcv.requests()) == 5 }, 5*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
