package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/jobs/jobstest"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestWorkerProcess is not a test: it is the worker process that
// TestWorkerSurvivesSIGKILL starts (the os/exec helper-process pattern).
// Run directly, it returns at once.
func TestWorkerProcess(t *testing.T) {
	url := os.Getenv("VOICED_TEST_WORKER_DB")
	if url == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := storage.Open(ctx, storage.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	w, err := webhook.New(webhook.Config{AllowLoopback: true, Poll: 50 * time.Millisecond, Timeout: 2 * time.Second, Lease: 3 * time.Second}, nil, s.Outbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestWorkerSurvivesSIGKILL(t *testing.T) {
	for _, d := range sqltest.Dialects {
		t.Run(string(d), func(t *testing.T) { testSIGKILL(t, d) })
	}
}

func testSIGKILL(t *testing.T, d migrations.Dialect) {
	ctx := context.Background()
	url := sqltest.URL(t, d)
	db, err := storage.Open(ctx, storage.Config{URL: url})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.Migrate(ctx, nil))
	s := newStore(t, db, nil)
	org := newOrg(t, s)

	// The receiver hangs on the first request (the worker is then
	// mid-delivery) and accepts the next one.
	var mu sync.Mutex
	var ids []string
	first := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			EventID string `json:"event_id"`
		}
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		ids = append(ids, body.EventID)
		n := len(ids)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	_, err = s.Webhooks.CreateWebhookEndpoint(ctx, org, "r", srv.URL, nil)
	require.NoError(t, err)
	ev, err := s.Outbox.Emit(ctx, org, "call.graded", map[string]any{"call_id": 1})
	require.NoError(t, err)

	start := func() *jobstest.Replica {
		return jobstest.Start(t, "TestWorkerProcess", "VOICED_TEST_WORKER_DB="+url)
	}

	replica := start()
	select {
	case <-first:
	case <-time.After(20 * time.Second):
		t.Fatalf("the worker never delivered; its output:\n%s", replica.Output())
	}
	replica.Kill(t)

	ds, err := s.Outbox.EventDeliveries(ctx, ev.ID)
	require.NoError(t, err)
	require.Equal(t, storage.DeliveryPending, ds[0].Status, "the killed worker recorded nothing")
	require.Zero(t, ds[0].Attempts)

	replica = start()
	defer replica.Stop()
	require.Eventually(t, func() bool {
		ds, err := s.Outbox.EventDeliveries(ctx, ev.ID)
		return err == nil && ds[0].Status == storage.DeliveryDelivered
	}, 20*time.Second, 50*time.Millisecond, "the restarted worker did not deliver; its output:\n%s", replica.Output())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{ev.ID, ev.ID}, ids, "the same event, at least once")
}
