package storage_test

import (
	"context"
	"encoding/json"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestWebhookEndpoints(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s, org := billingOrg(t, db, nil, 0)

		e, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "Prod", "https://hooks.example/a", []string{"call.graded"})
		require.NoError(t, err)
		require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{48}$`), e.Secret)
		require.Equal(t, e.Secret[:4]+"…"+e.Secret[44:], e.SecretHint)
		require.Equal(t, storage.EndpointActive, e.Status)

		got, err := s.Webhooks.WebhookEndpoint(ctx, org, e.ID)
		require.NoError(t, err)
		require.Equal(t, e.Secret, got.Secret, "the sealed secret opens to the same value")
		_, err = s.Webhooks.WebhookEndpoint(ctx, org+1, e.ID)
		require.ErrorIs(t, err, storage.ErrNotFound, "another org's endpoint is invisible")

		label, disabled, none := "Renamed", storage.EndpointDisabled, []string{}
		got, err = s.Webhooks.UpdateWebhookEndpoint(ctx, org, e.ID, storage.EndpointPatch{Label: &label, Status: &disabled, Events: &none})
		require.NoError(t, err)
		require.Equal(t, "Renamed", got.Label)
		require.Equal(t, []string{}, got.Events)
		require.Equal(t, storage.EndpointDisabled, got.Status)

		list, err := s.Webhooks.WebhookEndpoints(ctx, org)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.NoError(t, s.Webhooks.DeleteWebhookEndpoint(ctx, org, e.ID))
		require.ErrorIs(t, s.Webhooks.DeleteWebhookEndpoint(ctx, org, e.ID), storage.ErrNotFound)
	})
}

func TestOutbox(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()

		t.Run("fan-out follows filters and states", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			all, _ := s.Webhooks.CreateWebhookEndpoint(ctx, org, "all", "https://a.example/", nil)
			graded, _ := s.Webhooks.CreateWebhookEndpoint(ctx, org, "graded", "https://b.example/", []string{"call.graded"})
			off, _ := s.Webhooks.CreateWebhookEndpoint(ctx, org, "off", "https://c.example/", nil)
			disabled := storage.EndpointDisabled
			_, err := s.Webhooks.UpdateWebhookEndpoint(ctx, org, off.ID, storage.EndpointPatch{Status: &disabled})
			require.NoError(t, err)
			_, err = s.Webhooks.SetWebhook(ctx, org, "https://legacy.example/hook", false)
			require.NoError(t, err)

			ev, err := s.Outbox.Emit(ctx, org, "call.graded", map[string]any{"call_id": 7})
			require.NoError(t, err)
			require.JSONEq(t, `{"call_id":7}`, string(ev.Data))
			ds, err := s.Outbox.EventDeliveries(ctx, ev.ID)
			require.NoError(t, err)
			require.Equal(t, []string{all.ID, graded.ID}, endpointIDs(ds))

			ev, err = s.Outbox.Emit(ctx, org, "telephony.complete", json.RawMessage(`{"call_id":8}`))
			require.NoError(t, err)
			ds, _ = s.Outbox.EventDeliveries(ctx, ev.ID)
			require.Equal(t, []string{all.ID, ""}, endpointIDs(ds), "the legacy URL gets call completions")
			require.Equal(t, storage.LegacyAttempts, ds[1].MaxAttempts)
			require.Equal(t, storage.EndpointAttempts, ds[0].MaxAttempts)

			ev, err = s.Outbox.Emit(ctx, org, "telephony.incoming", map[string]any{})
			require.NoError(t, err)
			ds, _ = s.Outbox.EventDeliveries(ctx, ev.ID)
			require.Equal(t, []string{all.ID}, endpointIDs(ds), "incoming reaches the legacy URL only by its blocking exchange")

			_, err = s.Outbox.Emit(ctx, org, "call.graded", []byte(`[1]`))
			require.Error(t, err, "data must be an object")
		})

		t.Run("concurrent workers never claim one delivery twice", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			_, err := s.Webhooks.CreateWebhookEndpoint(ctx, org, "all", "https://a.example/", nil)
			require.NoError(t, err)
			for range 60 {
				_, err := s.Outbox.Emit(ctx, org, "call.graded", map[string]any{})
				require.NoError(t, err)
			}
			now := time.Now().Add(time.Second)
			var mu sync.Mutex
			seen := map[int64]int{}
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() {
					for {
						got, err := s.Outbox.ClaimDeliveries(ctx, now, time.Minute, 7)
						if err != nil {
							t.Error(err)
							return
						}
						if len(got) == 0 {
							return
						}
						mu.Lock()
						for _, o := range got {
							if o.OrgID == org {
								seen[o.ID]++
							}
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			require.Len(t, seen, 60)
			for id, n := range seen {
				require.Equal(t, 1, n, "delivery %d claimed %d times", id, n)
			}
		})

		t.Run("attempts, lease loss and failing", func(t *testing.T) {
			s, org := billingOrg(t, db, nil, 0)
			e, _ := s.Webhooks.CreateWebhookEndpoint(ctx, org, "one", "https://a.example/", nil)
			ev, err := s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{"n": 1})
			require.NoError(t, err)
			ds, _ := s.Outbox.EventDeliveries(ctx, ev.ID)
			t0 := time.Now().Add(time.Second)
			o, err := s.Outbox.ClaimDelivery(ctx, ds[0].ID, t0, time.Minute)
			require.NoError(t, err)
			require.Equal(t, e.URL, o.URL)
			require.Equal(t, e.Secret, o.Secret)
			require.Equal(t, "alert.triggered", o.Type)
			require.NotNil(t, o.FirstAttemptAt)
			_, err = s.Outbox.ClaimDelivery(ctx, ds[0].ID, t0, time.Minute)
			require.ErrorIs(t, err, storage.ErrNotFound, "held by the first claim")

			// The lease runs out; a second worker takes over; the first
			// worker's late result is ignored.
			o2, err := s.Outbox.ClaimDelivery(ctx, ds[0].ID, t0.Add(2*time.Minute), time.Minute)
			require.NoError(t, err)
			require.Equal(t, o.FirstAttemptAt, o2.FirstAttemptAt, "the schedule counts from the first attempt")
			_, err = s.Outbox.RecordAttempt(ctx, o, storage.Attempt{At: t0, StatusCode: 500, NextAt: t0.Add(time.Minute)})
			require.ErrorIs(t, err, storage.ErrNotFound)
			d, err := s.Outbox.RecordAttempt(ctx, o2, storage.Attempt{At: t0, Err: "boom", NextAt: time.Time{}})
			require.NoError(t, err)
			require.Equal(t, storage.DeliveryFailed, d.Status)
			require.Equal(t, 1, d.Attempts)
			got, _ := s.Webhooks.WebhookEndpoint(ctx, org, e.ID)
			require.Equal(t, storage.EndpointFailing, got.Status)

			// A failing endpoint's new deliveries wait; resuming releases them.
			ev, _ = s.Outbox.Emit(ctx, org, "alert.triggered", map[string]any{"n": 2})
			claimed, err := s.Outbox.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Minute, 1000)
			require.NoError(t, err)
			require.NotContains(t, eventIDs(claimed), ev.ID)
			active := storage.EndpointActive
			_, err = s.Webhooks.UpdateWebhookEndpoint(ctx, org, e.ID, storage.EndpointPatch{Status: &active})
			require.NoError(t, err)
			claimed, err = s.Outbox.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Minute, 1000)
			require.NoError(t, err)
			require.Contains(t, eventIDs(claimed), ev.ID)

			// Deleting the endpoint abandons its deliveries.
			require.NoError(t, s.Webhooks.DeleteWebhookEndpoint(ctx, org, e.ID))
			ds, _ = s.Outbox.EventDeliveries(ctx, ev.ID)
			require.Empty(t, ds)
		})
	})
}

func endpointIDs(ds []storage.Delivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.EndpointID)
	}
	return out
}

func eventIDs(os []storage.Outgoing) []string {
	out := []string{}
	for _, o := range os {
		out = append(out, o.EventID)
	}
	return out
}
