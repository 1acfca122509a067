package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/control/billing"
	"github.com/voiced/voiced/control/monitoring"
	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// validatePayments checks the Stripe flags; has says which flags the
// command takes.
func (c *config) validatePayments(has func(string) bool) error {
	if has("stripe-api-key") && c.StripeAPIKey != "" {
		if !strings.HasPrefix(c.StripeAPIKey, "sk_") && !strings.HasPrefix(c.StripeAPIKey, "rk_") {
			return errors.New("invalid --stripe-api-key: want a secret key like sk_live_..., sk_test_... or rk_live_...")
		}
	}
	if has("stripe-api-base") && c.StripeAPIBase != "" {
		u, err := url.Parse(c.StripeAPIBase)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("invalid --stripe-api-base %q: want an absolute http(s) URL like http://127.0.0.1:12111", c.StripeAPIBase)
		}
	}
	if has("stripe-webhook-secret") && c.StripeWebhookSecret != "" && !strings.HasPrefix(c.StripeWebhookSecret, "whsec_") {
		return errors.New("invalid --stripe-webhook-secret: want Stripe's signing secret, whsec_...")
	}
	if has("stripe-webhook-secret") && c.StripeWebhookSecret != "" && c.StripeAPIKey == "" {
		return errors.New("invalid --stripe-webhook-secret: it needs --stripe-api-key")
	}
	return nil
}

// paymentConfig is the payment provider's configuration from the flags.
func (c *config) paymentConfig() payment.Config {
	return payment.Config{APIKey: c.StripeAPIKey, APIBase: c.StripeAPIBase, WebhookSecret: c.StripeWebhookSecret}
}

// background runs the webhook delivery worker, the sweep that bills calls
// a crash left unbilled (billSweep, every 30 s) and, with a payment
// provider, the auto-reload worker, until stop is called; stop waits for
// them (in-flight deliveries finish and are recorded). The auto-reload
// worker's charges count in providers, the status heartbeat's window, as
// top-ups do: a provider that fails only for background charges still
// shows on /v1/status.
func background(ctx context.Context, c *config, store *storage.Store, billSweep func(context.Context, time.Duration), providers *monitoring.Window, log *slog.Logger) (stop func(), err error) {
	hooks, err := webhook.New(webhook.Config{AllowLoopback: c.WebhookAllowLoopback}, log.With("component", "webhooks"), store.Outbox)
	if err != nil {
		return nil, err
	}
	var reloader *billing.Reloader
	if c.StripeAPIKey != "" {
		st, err := payment.NewStripe(c.paymentConfig())
		if err != nil {
			return nil, fmt.Errorf("stripe: %w", err)
		}
		if reloader, err = billing.NewReloader(billing.Config{}, log.With("component", "auto_reload"), store.Billing, monitoring.ReportPayments(st, providers)); err != nil {
			return nil, err
		}
	}
	// Only stop ends them: they keep delivering while HTTP drains.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = hooks.Run(ctx) })
	if reloader != nil {
		wg.Go(func() { _ = reloader.Run(ctx) })
	}
	wg.Go(func() { billSweep(ctx, 30*time.Second) })
	if c.NumberFeeCents > 0 {
		wg.Go(func() {
			t := time.NewTicker(time.Hour)
			defer t.Stop()
			for {
				if r, err := store.Billing.ChargeNumberFees(ctx, time.Now(), c.NumberFeeCents); err != nil && ctx.Err() == nil {
					log.Warn("number fee sweep", "err", err.Error())
				} else if r.Charged > 0 || r.Due > 0 {
					log.Info("number fees", "charged", r.Charged, "due", r.Due)
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }, nil
}
