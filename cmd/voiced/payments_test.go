package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/monitoring"
	"github.com/voiced/voiced/control/payment/paymenttest"
	"github.com/voiced/voiced/storage"
)

func TestPaymentFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve", "--stripe-api-key", "pk_live_abc"}, nil, "--stripe-api-key"},
		{[]string{"serve"}, map[string]string{"VOICED_STRIPE_API_KEY": "secret"}, "--stripe-api-key"},
		{[]string{"serve", "--stripe-api-key", "sk_test_x", "--stripe-api-base", "localhost:12111"}, nil, "--stripe-api-base"},
		{[]string{"serve", "--stripe-api-key", "sk_test_x", "--stripe-webhook-secret", "abc"}, nil, "--stripe-webhook-secret"},
		{[]string{"serve", "--stripe-webhook-secret", "whsec_abc"}, nil, "--stripe-webhook-secret"},
		{[]string{"serve"}, map[string]string{"VOICED_WEBHOOK_ALLOW_LOOPBACK": "perhaps"}, "--webhook-allow-loopback"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := run(context.Background(), append(tc.args, "--data-dir", t.TempDir()), io.Discard, io.Discard)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	var out bytes.Buffer
	require.ErrorIs(t, run(context.Background(), []string{"serve", "--help"}, &out, io.Discard), flag.ErrHelp)
	for _, f := range []string{"stripe-api-key", "stripe-api-base", "stripe-webhook-secret", "webhook-allow-loopback"} {
		require.Contains(t, out.String(), "-"+f)
		require.Contains(t, out.String(), "VOICED_"+strings.ToUpper(strings.ReplaceAll(f, "-", "_")))
	}
}

// TestServeBillingAndDelivery runs serve against stripe-mock: a top-up
// credits the balance, and an event written to the outbox is delivered by
// the background worker to a receiver on loopback (allowed by default in
// serve).
func TestServeBillingAndDelivery(t *testing.T) {
	stripeBase := paymenttest.Start(t, paymenttest.Succeeded)
	dir := t.TempDir()
	key := bytes.Repeat([]byte{9}, 32)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuf
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--secret-key", hex.EncodeToString(key),
			"--stripe-api-key", "sk_test_voiced", "--stripe-api-base", stripeBase, "--stripe-webhook-secret", paymenttest.WebhookSecret}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
	}()
	var addr string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`http_addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 20*time.Second, 20*time.Millisecond, "stderr: %s", stderr.String())
	apiKey := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(stdout.String())
	call := func(method, path string, body any) (int, map[string]any) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}

	code, m := call("POST", "/v1/billing/top-up", map[string]any{"amount_cents": 1500, "payment_method_id": "pm_card_visa"})
	require.Equal(t, 201, code, "%v", m)
	require.Equal(t, "succeeded", m["status"])
	code, m = call("GET", "/v1/billing", nil)
	require.Equal(t, 200, code)
	require.Equal(t, float64(1000+1500), m["balance_cents"], "starting credit plus the top-up")

	var mu sync.Mutex
	var got []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			EventID string `json:"event_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, body.EventID)
		mu.Unlock()
	}))
	defer rcv.Close()
	code, m = call("POST", "/v1/developer/webhook-endpoints", map[string]any{"label": "local", "url": rcv.URL})
	require.Equal(t, 201, code, "%v", m)

	// A state change elsewhere in the process writes the outbox; the
	// background worker picks it up at its next poll.
	db, err := storage.Open(context.Background(), storage.Config{URL: "sqlite://" + filepath.Join(dir, "voiced.db")})
	require.NoError(t, err)
	defer db.Close()
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: key})
	require.NoError(t, err)
	ev, err := s.Outbox.Emit(context.Background(), 1, "alert.triggered", map[string]any{"rule": "test"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1 && got[0] == ev.ID
	}, 10*time.Second, 20*time.Millisecond)
}

// TestAutoReloadChargesReachHeartbeat checks the wiring of background: a
// charge the auto-reload worker makes counts in the status heartbeat's
// provider window like a top-up does, so a payment provider that fails
// only for background charges still shows on /v1/status.
func TestAutoReloadChargesReachHeartbeat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String() // nothing listens here once closed
	require.NoError(t, ln.Close())

	ctx := context.Background()
	db, err := storage.Open(ctx, storage.Config{URL: "sqlite://" + filepath.Join(t.TempDir(), "voiced.db")})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Migrate(ctx, slog.New(slog.DiscardHandler)))
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: bytes.Repeat([]byte{5}, 32)})
	require.NoError(t, err)
	u, err := s.Orgs.CreateUser(ctx, "reload@example.com", "R", "Eload")
	require.NoError(t, err)
	o, err := s.Orgs.CreateOrg(ctx, u.ID, "Reload")
	require.NoError(t, err)
	_, err = s.Billing.Post(ctx, o.ID, storage.TxAdjustment, 1500, "seed", "")
	require.NoError(t, err)
	_, err = s.Billing.SetProviderCustomer(ctx, o.ID, "cus_reload")
	require.NoError(t, err)
	_, err = s.Billing.SetDefaultPaymentMethod(ctx, o.ID, "pm_card_visa")
	require.NoError(t, err)
	on, minimum, amount := true, int64(1000), int64(2500)
	_, err = s.Billing.UpdateAutoReload(ctx, o.ID, storage.AutoReloadPatch{Enabled: &on, MinimumCents: &minimum, AmountCents: &amount})
	require.NoError(t, err)

	window := monitoring.NewWindow(nil)
	c := &config{StripeAPIKey: "sk_test_voiced", StripeAPIBase: down}
	stop, err := background(ctx, c, s, func(context.Context, time.Duration) {}, window, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer stop()
	require.Zero(t, window.Health()[monitoring.ProviderPayments].Requests, "no charge before the balance crosses the minimum")

	// A debit across the minimum queues a reload; the worker's charge
	// fails because the provider is unreachable.
	_, err = s.Billing.Post(ctx, o.ID, storage.TxCallUsage, -600, "call", "call-1")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		h := window.Health()[monitoring.ProviderPayments]
		return h.Requests >= 1 && h.Errors == h.Requests
	}, 15*time.Second, 50*time.Millisecond, "the worker's failed charge is in the heartbeat window: %+v", window.Health())
}
