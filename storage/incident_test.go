package storage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestIncidents(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s, org := billingOrg(t, db, nil, 0)
		inc := s.Incidents
		fired := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
		alert := storage.Alert{Source: "azure", Key: "cpu-high", Rule: "cpu-high", Product: "api", Severity: "error", Title: "cpu-high", At: fired}

		t.Run("dedupe, then resolve opens a new one", func(t *testing.T) {
			a, tok, err := inc.RecordAlert(ctx, alert, nil)
			require.NoError(t, err)
			require.NotEmpty(t, tok)
			require.Equal(t, int64(1), a.Count)
			require.Equal(t, fired, a.StartedAt)
			b, tok2, err := inc.RecordAlert(ctx, alert, nil)
			require.NoError(t, err)
			require.Empty(t, tok2, "a repeat makes no new token")
			require.Equal(t, a.ID, b.ID)
			require.Equal(t, int64(2), b.Count)

			r, err := inc.ResolveAlert(ctx, "azure", "cpu-high", fired.Add(time.Hour))
			require.NoError(t, err)
			require.NotNil(t, r.ResolvedAt)
			_, err = inc.ResolveAlert(ctx, "azure", "cpu-high", fired)
			require.ErrorIs(t, err, storage.ErrNotFound)

			c, tok3, err := inc.RecordAlert(ctx, alert, nil)
			require.NoError(t, err)
			require.NotEmpty(t, tok3)
			require.NotEqual(t, a.ID, c.ID, "after it resolved the alert is a new incident")
			_, err = inc.ResolveAlert(ctx, "azure", "cpu-high", fired)
			require.NoError(t, err)
		})

		t.Run("concurrent repeats make one incident", func(t *testing.T) {
			a := alert
			a.Key = "burst"
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 8 {
				wg.Go(func() {
					_, _, err := inc.RecordAlert(ctx, a, nil)
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					require.ErrorIs(t, err, storage.ErrConflict, "only a lost race may fail")
				}
			}
			r, err := inc.ResolveAlert(ctx, "azure", "burst", fired)
			require.NoError(t, err)
			require.GreaterOrEqual(t, r.Count, int64(1))
		})

		t.Run("ack by token once, by rule in bulk", func(t *testing.T) {
			a := alert
			a.Key, a.Rule = "disk", "disk"
			i1, tok, err := inc.RecordAlert(ctx, a, nil)
			require.NoError(t, err)
			active, err := inc.ActiveIncidents(ctx)
			require.NoError(t, err)
			require.Len(t, active, 1)
			got, err := inc.AckIncident(ctx, tok)
			require.NoError(t, err)
			require.Equal(t, i1.ID, got.ID)
			require.NotNil(t, got.AckedAt)
			_, err = inc.AckIncident(ctx, tok)
			require.ErrorIs(t, err, storage.ErrGone)
			_, err = inc.AckIncident(ctx, "ack_unknown")
			require.ErrorIs(t, err, storage.ErrNotFound)
			active, _ = inc.ActiveIncidents(ctx)
			require.Empty(t, active, "an acknowledged incident is not active")

			b := alert
			b.Key, b.Rule = "mem", "mem"
			_, tokB, _ := inc.RecordAlert(ctx, b, nil)
			c := alert
			c.Source, c.Key, c.Rule = "glitchtip", "https://gt.example/issues/1", "mem"
			_, _, _ = inc.RecordAlert(ctx, c, nil)
			n, err := inc.AckIncidentsByRule(ctx, []string{"mem", "nothing"})
			require.NoError(t, err)
			require.Equal(t, int64(2), n)
			n, _ = inc.AckIncidentsByRule(ctx, []string{"mem"})
			require.Zero(t, n, "already acknowledged")
			_, err = inc.AckIncident(ctx, tokB)
			require.ErrorIs(t, err, storage.ErrGone, "acknowledged by rule: the link is spent")
		})

		t.Run("a new incident emits alert.triggered to subscribed orgs", func(t *testing.T) {
			sub, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "alerts", "https://a.example/", []string{storage.AlertEventType})
			require.NoError(t, err)
			_, err = s.Webhooks.CreateWebhookEndpoint(ctx, org, "calls", "https://b.example/", []string{"call.graded"})
			require.NoError(t, err)
			a := alert
			a.Key = "emit"
			event := func(i storage.Incident) any { return map[string]any{"incident_id": i.ID} }
			_, _, err = inc.RecordAlert(ctx, a, event)
			require.NoError(t, err)
			_, _, err = inc.RecordAlert(ctx, a, event)
			require.NoError(t, err)
			ds, err := s.Outbox.EndpointDeliveries(ctx, sub.ID)
			require.NoError(t, err)
			require.Len(t, ds, 1, "one delivery to the subscribed endpoint; the repeat emits nothing")
			require.Equal(t, org, ds[0].OrgID)
			all, err := s.Outbox.EventDeliveries(ctx, ds[0].EventID)
			require.NoError(t, err)
			require.Len(t, all, 1, "the endpoint subscribed to call.graded gets none")
		})
	})
}
