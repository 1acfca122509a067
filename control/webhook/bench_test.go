package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage/sqltest"
)

// BenchmarkDeliveries measures deliveries per second from the outbox to a
// local receiver (httptest on loopback answering 204), signing included,
// on each database. Emitting the events is outside the timed region.
func BenchmarkDeliveries(b *testing.B) {
	for _, d := range sqltest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, sqltest.New(b, d), nil)
			org := newOrg(b, s)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			defer srv.Close()
			if _, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "bench", srv.URL, nil); err != nil {
				b.Fatal(err)
			}
			w, err := webhook.New(webhook.Config{AllowLoopback: true, Concurrency: 32}, nil, s.Outbox)
			if err != nil {
				b.Fatal(err)
			}
			const batch = 128
			data := map[string]any{"call_id": 1234, "status": "completed", "duration_seconds": 61}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				b.StopTimer()
				for range batch {
					if _, err := s.Outbox.Emit(ctx, org, "telephony.complete", data); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				k, err := w.DeliverDue(ctx)
				if err != nil || k != batch {
					b.Fatalf("delivered %d of %d: %v", k, batch, err)
				}
				n += k
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
