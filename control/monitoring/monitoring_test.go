package monitoring

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWindowAgesOut(t *testing.T) {
	now := time.Date(2026, 11, 28, 1, 0, 30, 0, time.UTC)
	w := NewWindow(func() time.Time { return now })
	boom := errors.New("x")
	w.Record(ProviderLLM, boom)
	w.Record(ProviderLLM, nil)
	now = now.Add(2 * time.Minute)
	w.Record(ProviderLLM, boom)
	require.Equal(t, ProviderHealth{Requests: 3, Errors: 2}, w.Health()[ProviderLLM])
	now = now.Add(3 * time.Minute) // the first minute is now six buckets back
	require.Equal(t, ProviderHealth{Requests: 1, Errors: 1}, w.Health()[ProviderLLM])
	now = now.Add(10 * time.Minute)
	w.Record(ProviderLLM, nil) // reuses a stale bucket's slot
	require.Equal(t, ProviderHealth{Requests: 1}, w.Health()[ProviderLLM])
	var none *Window
	none.Record(ProviderLLM, boom)
	require.Empty(t, none.Health())
}

func TestProductOf(t *testing.T) {
	for _, c := range []struct {
		texts []string
		want  string
	}{
		{[]string{"sip-trunk-5xx"}, ProductTelephony},
		{[]string{"High latency", "/subscriptions/x/resourceGroups/voiced-webrtc"}, ProductBrowser},
		{[]string{"voiced-realtime"}, ProductRealtime},
		{[]string{"Stripe webhook failures"}, ProductBilling},
		{[]string{"webhook_outbox_backlog"}, ProductWebhooks},
		{[]string{"rapid growth"}, ProductAPI},
		{[]string{""}, ProductAPI},
	} {
		require.Equal(t, c.want, productOf(c.texts...), "%q", c.texts)
	}
}
