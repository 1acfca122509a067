package payment_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/control/payment/paymenttest"
	"github.com/voiced/voiced/storage"
)

func TestStripeMock(t *testing.T) {
	ctx := context.Background()
	base := paymenttest.Start(t, paymenttest.Bundled)
	st, err := payment.NewStripe(payment.Config{APIKey: "sk_test_voiced", APIBase: base, WebhookSecret: paymenttest.WebhookSecret})
	require.NoError(t, err)

	cus, err := st.Customer(ctx, 7, "Acme")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(cus, "cus_"), cus)

	in, err := st.Charge(ctx, payment.Charge{OrgID: 7, Customer: cus, PaymentMethod: "pm_card_visa", AmountCents: 500, IdempotencyKey: storage.NewUUID(), Purpose: storage.PurposeTopUp})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(in.ID, "pi_"), in.ID)
	require.Equal(t, "requires_payment_method", in.Status, "stripe-mock's bundled intent")
	require.NotEmpty(t, in.ClientSecret)

	_, err = st.Charge(ctx, payment.Charge{OrgID: 7, Customer: cus, PaymentMethod: "pm_x", AmountCents: 500})
	require.Error(t, err, "a charge needs an idempotency key")

	si, err := st.SetupIntent(ctx, 7, cus)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(si.ID, "seti_"), si.ID)
	require.NotEmpty(t, si.ClientSecret)

	require.NoError(t, st.AttachMethod(ctx, cus, "pm_card_visa"))

	ok, err := payment.NewStripe(payment.Config{APIKey: "sk_test_voiced", APIBase: paymenttest.Start(t, paymenttest.Succeeded)})
	require.NoError(t, err)
	in, err = ok.Charge(ctx, payment.Charge{OrgID: 7, Customer: cus, PaymentMethod: "pm_card_visa", AmountCents: 500, IdempotencyKey: storage.NewUUID(), Purpose: storage.PurposeTopUp})
	require.NoError(t, err)
	require.Equal(t, "succeeded", in.Status)
}

func TestParseEvent(t *testing.T) {
	st, err := payment.NewStripe(payment.Config{APIKey: "sk_test_voiced", APIBase: "http://127.0.0.1:1", WebhookSecret: paymenttest.WebhookSecret})
	require.NoError(t, err)
	now := time.Now()
	pi := map[string]any{"id": "pi_9", "object": "payment_intent", "amount": 1500, "amount_received": 1500, "currency": "usd", "status": "succeeded",
		"metadata": map[string]string{payment.MetaOrgID: "42", payment.MetaPurpose: "auto_reload", payment.MetaReloadID: "r-1"}}
	payload, sig := paymenttest.Event(t, paymenttest.WebhookSecret, "evt_9", "payment_intent.succeeded", pi, now)
	ev, err := st.ParseEvent(payload, sig)
	require.NoError(t, err)
	require.Equal(t, storage.ProviderEvent{ID: "evt_9", Type: "payment_intent.succeeded", Kind: storage.EventPaymentSucceeded, PaymentID: "pi_9",
		AmountCents: 1500, Status: "succeeded", OrgID: 42, Purpose: storage.PurposeAutoReload, ReloadID: "r-1"}, ev)

	si := map[string]any{"id": "seti_1", "object": "setup_intent", "status": "succeeded", "customer": "cus_1", "payment_method": "pm_1", "metadata": map[string]string{}}
	payload, sig = paymenttest.Event(t, paymenttest.WebhookSecret, "evt_10", "setup_intent.succeeded", si, now)
	ev, err = st.ParseEvent(payload, sig)
	require.NoError(t, err)
	require.Equal(t, storage.EventSetupSucceeded, ev.Kind)
	require.Equal(t, "cus_1", ev.CustomerID)
	require.Equal(t, "pm_1", ev.PaymentMethod)

	payload, sig = paymenttest.Event(t, "whsec_other", "evt_11", "payment_intent.succeeded", pi, now)
	_, err = st.ParseEvent(payload, sig)
	require.ErrorIs(t, err, payment.ErrBadSignature)
	payload, sig = paymenttest.Event(t, paymenttest.WebhookSecret, "evt_12", "payment_intent.succeeded", pi, now.Add(-time.Hour))
	_, err = st.ParseEvent(payload, sig)
	require.ErrorIs(t, err, payment.ErrBadSignature, "a replay from an hour ago is refused")
	payload, sig = paymenttest.Event(t, paymenttest.WebhookSecret, "evt_13", "payment_intent.succeeded", pi, now)
	_, err = st.ParseEvent(append(payload, ' '), sig)
	require.ErrorIs(t, err, payment.ErrBadSignature, "the signature covers the raw body")

	payload, sig = paymenttest.Event(t, paymenttest.WebhookSecret, "evt_14", "customer.created", map[string]any{"id": "cus_2", "object": "customer"}, now)
	ev, err = st.ParseEvent(payload, sig)
	require.NoError(t, err)
	require.Equal(t, storage.EventOther, ev.Kind)
}

// TestClassify drives stripe-go against a server answering with Stripe's
// error bodies (stripe-mock cannot decline cards), so the mapping is
// checked on real parsed provider errors.
func TestClassify(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		want      int
		code      string
		retryable bool
		next      string
	}{
		{"decline", 402, `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds."}}`, 402, payment.CodeCardDeclined, false, payment.NextUpdatePaymentMethod},
		{"expired card", 402, `{"error":{"type":"card_error","code":"expired_card","message":"Your card has expired."}}`, 402, payment.CodeCardDeclined, false, payment.NextUpdatePaymentMethod},
		{"3-D Secure", 402, `{"error":{"type":"card_error","code":"authentication_required","decline_code":"authentication_required","message":"Authentication required."}}`, 402, payment.CodeAuthenticationRequired, true, payment.NextAuthenticate},
		{"invalid request", 400, `{"error":{"type":"invalid_request_error","code":"amount_too_small","param":"amount","message":"Amount must be at least $0.50 usd"}}`, 422, payment.CodeRequestInvalid, false, payment.NextUpdatePaymentMethod},
		{"no such payment method", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such PaymentMethod"}}`, 422, payment.CodeRequestInvalid, false, payment.NextUpdatePaymentMethod},
		{"rate limit", 429, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}`, 503, payment.CodeProviderUnavailable, true, payment.NextRetry},
		{"outage", 503, `{"error":{"type":"api_error","message":"Service unavailable"}}`, 503, payment.CodeProviderUnavailable, true, payment.NextRetry},
		{"server error", 500, `{"error":{"type":"api_error","message":"Something went wrong"}}`, 502, payment.CodeProviderError, true, payment.NextRetry},
		{"bad API key", 401, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}`, 502, payment.CodeProviderError, true, payment.NextRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			st, err := payment.NewStripe(payment.Config{APIKey: "sk_test_x", APIBase: srv.URL, MaxNetworkRetries: -1})
			require.NoError(t, err)
			_, err = st.Charge(ctx, payment.Charge{OrgID: 1, Customer: "cus_1", PaymentMethod: "pm_1", AmountCents: 100, IdempotencyKey: "k"})
			var pe *payment.Error
			require.True(t, errors.As(err, &pe), "%v", err)
			require.Equal(t, tc.want, pe.Status)
			require.Equal(t, tc.code, pe.Code)
			require.Equal(t, tc.retryable, pe.Retryable)
			require.Equal(t, tc.next, pe.NextAction)
			require.NotContains(t, pe.Detail, "insufficient", "details are ours, not the provider's text")
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		st, _ := payment.NewStripe(payment.Config{APIKey: "sk_test_x", APIBase: srv.URL, MaxNetworkRetries: -1})
		_, err := st.SetupIntent(ctx, 1, "cus_1")
		var pe *payment.Error
		require.True(t, errors.As(err, &pe))
		require.Equal(t, 503, pe.Status)
		require.Equal(t, payment.CodeProviderUnavailable, pe.Code)
	})
	t.Run("not configured", func(t *testing.T) {
		_, err := payment.NewStripe(payment.Config{})
		require.ErrorIs(t, err, payment.ErrNotConfigured)
		require.Equal(t, 503, payment.Classify(err).Status)
	})
}
