package billing_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/control/payment/paymenttest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// postEvent delivers a signed provider event to the receiver.
func postEvent(a *controltest.API, payload []byte, sig string) controltest.Resp {
	a.T.Helper()
	req := httptest.NewRequest("POST", "/v1/billing/provider-events", bytes.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", sig)
	res, err := a.Srv.App().Test(req, fiber.TestConfig{Timeout: 30 * time.Second})
	require.NoError(a.T, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return controltest.Resp{Status: res.StatusCode, Body: b, Header: res.Header}
}

func withPayments(base string) control.Config {
	return control.Config{PublicURL: "https://voice.example", Payments: payment.Config{
		APIKey: "sk_test_voiced", APIBase: base, WebhookSecret: paymenttest.WebhookSecret, MaxNetworkRetries: -1}}
}

func TestBillingAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.New(t, db)
		ctx := context.Background()

		t.Run("account and auto-reload rules", func(t *testing.T) {
			w := a.World()
			r := a.Do("GET", "/v1/billing", w.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			require.JSONEq(t, `{"balance_cents":0,"balance_usd":"0.00","currency":"usd","auto_reload_enabled":false,
				"auto_reload_minimum_cents":0,"auto_reload_amount_cents":0,"auto_reload_monthly_limit_cents":null,
				"has_payment_method":false,"has_ever_topped_up":false}`, string(r.Body))
			_, err := a.Store.Billing.Post(ctx, w.Org.ID, storage.TxAdjustment, 12345, "credit", "")
			require.NoError(t, err)
			require.Equal(t, "123.45", a.Do("GET", "/v1/billing", w.MembK, nil).Obj(t)["balance_usd"])

			r = a.Do("PATCH", "/v1/billing", w.OwnerK, map[string]any{"auto_reload_enabled": true})
			require.Equal(t, 400, r.Status)
			require.Contains(t, r.Obj(t), "auto_reload_minimum_cents")
			require.Contains(t, r.Obj(t), "auto_reload_amount_cents")
			r = a.Do("PATCH", "/v1/billing", w.OwnerK, map[string]any{"auto_reload_minimum_cents": -1, "auto_reload_amount_cents": 0})
			require.Equal(t, 400, r.Status)
			require.Len(t, r.Obj(t), 2)
			require.Equal(t, 400, a.Do("PATCH", "/v1/billing", w.OwnerK, map[string]any{"auto_reload_monthly_limit_cents": -5}).Status)
			require.Equal(t, 400, a.Do("PATCH", "/v1/billing", w.OwnerK, map[string]any{"auto_reload_monthly_limit_cents": "lots"}).Status)
			require.Equal(t, 400, a.Do("PATCH", "/v1/billing", w.OwnerK, map[string]any{"auto_reload_enabled": "yes"}).Status)

			r = a.Do("PATCH", "/v1/billing", w.OwnerK, map[string]any{"auto_reload_enabled": true, "auto_reload_minimum_cents": 500, "auto_reload_amount_cents": 2000})
			require.Equal(t, 422, r.Status)
			require.Contains(t, r.Obj(t)["detail"], "payment method")

			r = a.Do("PATCH", "/v1/billing", w.MembK, map[string]any{"auto_reload_minimum_cents": 500, "auto_reload_amount_cents": 2000, "auto_reload_monthly_limit_cents": 10000})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, float64(10000), r.Obj(t)["auto_reload_monthly_limit_cents"])
			r = a.Do("PATCH", "/v1/billing", w.MembK, map[string]any{"auto_reload_monthly_limit_cents": 0})
			require.Equal(t, 200, r.Status)
			require.Nil(t, r.Obj(t)["auto_reload_monthly_limit_cents"], "0 is treated as null")
			require.Equal(t, float64(500), r.Obj(t)["auto_reload_minimum_cents"])
		})

		t.Run("top-up without a provider", func(t *testing.T) {
			w := a.World()
			r := a.Do("POST", "/v1/billing/top-up", w.OwnerK, map[string]any{"amount_cents": 500})
			require.Equal(t, 503, r.Status)
			require.JSONEq(t, `{"code":"billing_provider_unavailable","message":"The payment provider is unavailable.",
				"detail":"Payments cannot be processed right now. Try again in a few minutes.","retryable":true,"next_action":"retry_payment"}`, string(r.Body))
			require.Equal(t, 503, a.Do("POST", "/v1/billing/setup-intent", w.OwnerK, nil).Status)
			require.Equal(t, 503, a.Do("POST", "/v1/billing/default-payment-method", w.OwnerK, map[string]any{"payment_method_id": "pm_1"}).Status)

			for _, body := range []any{map[string]any{}, map[string]any{"amount_cents": 0}, map[string]any{"amount_cents": -3}, map[string]any{"amount_cents": 1.5}, `{"amount_cents":"5"}`} {
				r := a.Do("POST", "/v1/billing/top-up", w.OwnerK, body)
				require.Equal(t, 400, r.Status, "%v", body)
				require.Contains(t, r.Obj(t), "amount_cents", "%v", body)
			}
		})

		t.Run("transactions, newest first", func(t *testing.T) {
			w := a.World()
			for i := 1; i <= 5; i++ {
				_, err := a.Store.Billing.Post(ctx, w.Org.ID, storage.TxAdjustment, int64(i*100), fmt.Sprint("credit ", i), "")
				require.NoError(t, err)
			}
			_, err := a.Store.Billing.Post(ctx, w.Org.ID, storage.TxCallUsage, -50, "call 9", "call:9")
			require.NoError(t, err)
			r := a.Do("GET", "/v1/billing/transactions", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			l := r.List(t)
			require.Len(t, l, 6)
			require.Equal(t, "call_usage", l[0]["kind"])
			require.Equal(t, float64(-50), l[0]["amount_cents"])
			require.Equal(t, float64(1450), l[0]["balance_after_cents"])
			require.Equal(t, "call:9", l[0]["reference"])
			require.Nil(t, l[1]["reference"])
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, l[0]["created_at"])
			l = a.Do("GET", "/v1/billing/transactions?limit=2&offset=1", w.MembK, nil).List(t)
			require.Len(t, l, 2)
			require.Equal(t, "credit 5", l[0]["description"])
			for _, q := range []string{"limit=0", "limit=501", "limit=x", "offset=-1"} {
				require.Equal(t, 400, a.Do("GET", "/v1/billing/transactions?"+q, w.MembK, nil).Status, q)
			}
		})

		t.Run("the event receiver refuses without a provider", func(t *testing.T) {
			payload, sig := paymenttest.Event(t, paymenttest.WebhookSecret, "evt_none", "payment_intent.succeeded", map[string]any{"id": "pi_1"}, time.Now())
			require.Equal(t, 503, postEvent(a, payload, sig).Status)
		})
	})
}

func TestBillingStripeFlows(t *testing.T) {
	bundled := paymenttest.Start(t, paymenttest.Bundled)
	succeeded := paymenttest.Start(t, paymenttest.Succeeded)
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		a := controltest.NewWith(t, db, withPayments(bundled))
		w := a.World()

		// Saving a card: setup intent, then default payment method.
		r := a.Do("POST", "/v1/billing/setup-intent", w.MembK, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		si := r.Obj(t)
		require.True(t, strings.HasPrefix(si["setup_intent_id"].(string), "seti_"))
		require.NotEmpty(t, si["client_secret"])
		require.NotEmpty(t, si["status"])
		acct, err := a.Store.Billing.BillingAccount(ctx, w.Org.ID)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(acct.ProviderCustomerID, "cus_"), "a customer was created")
		customer := acct.ProviderCustomerID

		require.Equal(t, 400, a.Do("POST", "/v1/billing/default-payment-method", w.MembK, map[string]any{}).Status)
		r = a.Do("POST", "/v1/billing/default-payment-method", w.MembK, map[string]any{"payment_method_id": "pm_card_visa"})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, true, r.Obj(t)["has_payment_method"])
		acct, _ = a.Store.Billing.BillingAccount(ctx, w.Org.ID)
		require.Equal(t, customer, acct.ProviderCustomerID, "the customer is reused")

		// A top-up that is not succeeded yet credits nothing...
		r = a.Do("POST", "/v1/billing/top-up", w.MembK, map[string]any{"amount_cents": 700})
		require.Equal(t, 201, r.Status, string(r.Body))
		tu := r.Obj(t)
		pi := tu["payment_intent_id"].(string)
		require.True(t, strings.HasPrefix(pi, "pi_"))
		require.Equal(t, "requires_payment_method", tu["status"], "mirrors the provider's status")
		require.NotEmpty(t, tu["client_secret"])
		require.Equal(t, float64(0), a.Do("GET", "/v1/billing", w.MembK, nil).Obj(t)["balance_cents"])

		// ...until the provider's payment-succeeded event, applied once
		// however often it is delivered.
		obj := map[string]any{"id": pi, "object": "payment_intent", "amount": 700, "amount_received": 700, "currency": "usd", "status": "succeeded", "metadata": map[string]string{}}
		payload, sig := paymenttest.Event(t, paymenttest.WebhookSecret, "evt_"+pi, "payment_intent.succeeded", obj, time.Now())
		r = postEvent(a, payload, sig)
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, true, r.Obj(t)["applied"])
		for range 3 {
			r = postEvent(a, payload, sig)
			require.Equal(t, 200, r.Status)
			require.Equal(t, false, r.Obj(t)["applied"])
		}
		payload2, sig2 := paymenttest.Event(t, paymenttest.WebhookSecret, "evt_other_"+pi, "payment_intent.succeeded", obj, time.Now())
		require.Equal(t, 200, postEvent(a, payload2, sig2).Status)
		b := a.Do("GET", "/v1/billing", w.MembK, nil).Obj(t)
		require.Equal(t, float64(700), b["balance_cents"])
		require.Equal(t, true, b["has_ever_topped_up"])

		bad, badSig := paymenttest.Event(t, "whsec_forged", "evt_forged", "payment_intent.succeeded", obj, time.Now())
		require.Equal(t, 400, postEvent(a, bad, badSig).Status)
		require.Equal(t, 400, postEvent(a, payload, "").Status)
		// An event for a payment that is not ours is acknowledged and ignored.
		foreign, fSig := paymenttest.Event(t, paymenttest.WebhookSecret, "evt_foreign", "payment_intent.succeeded",
			map[string]any{"id": "pi_foreign", "object": "payment_intent", "amount": 100, "status": "succeeded"}, time.Now())
		r = postEvent(a, foreign, fSig)
		require.Equal(t, 200, r.Status)
		require.Equal(t, false, r.Obj(t)["applied"])

		// A card saved client-side is made default by the setup event too.
		setup, sSig := paymenttest.Event(t, paymenttest.WebhookSecret, "evt_setup", "setup_intent.succeeded",
			map[string]any{"id": si["setup_intent_id"], "object": "setup_intent", "status": "succeeded", "customer": customer, "payment_method": "pm_saved"}, time.Now())
		require.Equal(t, 200, postEvent(a, setup, sSig).Status)
		acct, _ = a.Store.Billing.BillingAccount(ctx, w.Org.ID)
		require.Equal(t, "pm_saved", acct.DefaultPaymentMethod)

		r = a.Do("PATCH", "/v1/billing", w.MembK, map[string]any{"auto_reload_enabled": true, "auto_reload_minimum_cents": 100, "auto_reload_amount_cents": 1000})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, true, r.Obj(t)["auto_reload_enabled"])

		// A succeeded top-up credits synchronously.
		a2 := controltest.NewWith(t, db, withPayments(succeeded))
		w2 := a2.World()
		r = a2.Do("POST", "/v1/billing/top-up", w2.OwnerK, map[string]any{"amount_cents": 2500, "payment_method_id": "pm_card_visa"})
		require.Equal(t, 201, r.Status, string(r.Body))
		require.Equal(t, "succeeded", r.Obj(t)["status"])
		b = a2.Do("GET", "/v1/billing", w2.OwnerK, nil).Obj(t)
		require.Equal(t, float64(2500), b["balance_cents"])
		require.Equal(t, true, b["has_ever_topped_up"])
		require.Equal(t, false, b["has_payment_method"], "paying with a card does not make it the default")
		tx := a2.Do("GET", "/v1/billing/transactions", w2.OwnerK, nil).List(t)
		require.Equal(t, "top_up", tx[0]["kind"])
		require.Equal(t, r.Obj(t)["payment_intent_id"], tx[0]["reference"])
		// Its event arriving later changes nothing.
		pi2 := r.Obj(t)["payment_intent_id"].(string)
		p3, s3 := paymenttest.Event(t, paymenttest.WebhookSecret, "evt_"+pi2, "payment_intent.succeeded",
			map[string]any{"id": pi2, "object": "payment_intent", "amount": 2500, "status": "succeeded"}, time.Now())
		require.Equal(t, 200, postEvent(a2, p3, s3).Status)
		require.Equal(t, float64(2500), a2.Do("GET", "/v1/billing", w2.OwnerK, nil).Obj(t)["balance_cents"])

		r = a2.Do("POST", "/v1/billing/top-up", w2.OwnerK, map[string]any{"amount_cents": 100})
		require.Equal(t, 422, r.Status, "no payment method at all")
		require.Equal(t, "billing_request_invalid", r.Obj(t)["code"])
	})
}

// TestBillingPaymentErrors points the API at a provider answering with
// Stripe's error bodies: the declines, authentication demands and outages
// stripe-mock cannot produce.
func TestBillingPaymentErrors(t *testing.T) {
	var mu sync.Mutex
	answer := `{}`
	status := 200
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/customers" {
			fmt.Fprint(w, `{"id":"cus_fake","object":"customer"}`)
			return
		}
		mu.Lock()
		code, body := status, answer
		mu.Unlock()
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}))
	defer fake.Close()
	set := func(code int, body string) { mu.Lock(); status, answer = code, body; mu.Unlock() }

	a := controltest.NewWith(t, sqltest.New(t, "sqlite"), withPayments(fake.URL))
	w := a.World()
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{402, `{"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline","message":"Your card was declined."}}`,
			`{"code":"card_declined","message":"The card was declined.","detail":"Your bank declined the payment. Use another payment method or contact your bank.","retryable":false,"next_action":"update_payment_method"}`},
		{402, `{"error":{"type":"card_error","code":"authentication_required","message":"Authentication required."}}`,
			`{"code":"payment_authentication_required","message":"The payment needs authentication.","detail":"Your bank asks you to authenticate this payment (3-D Secure). Complete the authentication, then try again.","retryable":true,"next_action":"authenticate_payment"}`},
		{400, `{"error":{"type":"invalid_request_error","code":"amount_too_small","message":"Amount must be at least $0.50 usd"}}`,
			`{"code":"billing_request_invalid","message":"The payment request was rejected.","detail":"The payment provider rejected the request. Check the payment method and the amount.","retryable":false,"next_action":"update_payment_method"}`},
		{429, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}`,
			`{"code":"billing_provider_unavailable","message":"The payment provider is unavailable.","detail":"Payments cannot be processed right now. Try again in a few minutes.","retryable":true,"next_action":"retry_payment"}`},
		{500, `{"error":{"type":"api_error","message":"internal"}}`,
			`{"code":"billing_provider_error","message":"The payment provider returned an error.","detail":"The payment could not be processed because of an error at the payment provider. Try again.","retryable":true,"next_action":"retry_payment"}`},
	} {
		set(tc.status, tc.body)
		r := a.Do("POST", "/v1/billing/top-up", w.OwnerK, map[string]any{"amount_cents": 40, "payment_method_id": "pm_x"})
		require.Equal(t, map[int]int{402: 402, 400: 422, 429: 503, 500: 502}[tc.status], r.Status, string(r.Body))
		require.JSONEq(t, tc.want, string(r.Body))
		// The same mapping applies to saving cards.
		r = a.Do("POST", "/v1/billing/setup-intent", w.OwnerK, nil)
		require.JSONEq(t, tc.want, string(r.Body))
	}
	bal, _ := a.Store.Billing.Balance(context.Background(), w.Org.ID)
	require.Zero(t, bal)
}
