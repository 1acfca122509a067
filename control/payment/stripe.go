package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/voiced/voiced/storage"
)

// Config says which Stripe to talk to. Zero values mean defaults.
type Config struct {
	// APIKey is the secret key (sk_live_..., sk_test_..., or anything
	// stripe-mock accepts). Required.
	APIKey string
	// APIBase is the API's base URL. Default https://api.stripe.com;
	// stripe-mock listens on http://127.0.0.1:12111.
	APIBase string
	// WebhookSecret verifies provider events (whsec_...). Empty refuses
	// every event.
	WebhookSecret string
	// Timeout bounds one provider request. Default 30 s.
	Timeout time.Duration
	// MaxNetworkRetries is stripe-go's retry budget for connection errors
	// and 409/429/5xx answers (same idempotency key). Default 2; negative
	// means none.
	MaxNetworkRetries int
	// EventTolerance is how old a signed event may be. Default 5 minutes.
	EventTolerance time.Duration
}

// Metadata keys written on every object voiced creates at the provider.
const (
	MetaOrgID    = "voiced_org_id"
	MetaPurpose  = "voiced_purpose"
	MetaReloadID = "voiced_reload_id"
)

// Stripe is the Stripe adapter. It is safe for concurrent use.
type Stripe struct {
	sc        *stripe.Client
	secret    string
	tolerance time.Duration
}

// NewStripe returns a Stripe adapter for cfg.
func NewStripe(cfg Config) (*Stripe, error) {
	if cfg.APIKey == "" {
		return nil, ErrNotConfigured
	}
	if cfg.APIBase == "" {
		cfg.APIBase = stripe.APIURL
	}
	if u, err := url.Parse(cfg.APIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("payment: API base %q is not an http(s) URL", cfg.APIBase)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	retries := int64(cfg.MaxNetworkRetries)
	switch {
	case cfg.MaxNetworkRetries == 0:
		retries = 2
	case cfg.MaxNetworkRetries < 0:
		retries = 0
	}
	if cfg.EventTolerance <= 0 {
		cfg.EventTolerance = 5 * time.Minute
	}
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(cfg.APIBase),
		HTTPClient:        &http.Client{Timeout: cfg.Timeout},
		MaxNetworkRetries: stripe.Int64(retries),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return &Stripe{sc: stripe.NewClient(cfg.APIKey, stripe.WithBackends(backends)), secret: cfg.WebhookSecret, tolerance: cfg.EventTolerance}, nil
}

// Intent is a PaymentIntent or SetupIntent as the API reports it.
type Intent struct {
	ID string
	// Status is the provider's status: succeeded, requires_action,
	// requires_payment_method, processing, ...
	Status       string
	ClientSecret string
}

// Customer creates the provider customer of orgID. The idempotency key is
// derived from the org, so a retry (or a concurrent first top-up in the
// provider's idempotency window) returns the same customer.
func (s *Stripe) Customer(ctx context.Context, orgID int64, name string) (string, error) {
	p := &stripe.CustomerCreateParams{Name: stripe.String(name), Metadata: map[string]string{MetaOrgID: strconv.FormatInt(orgID, 10)}}
	p.Context = ctx
	p.IdempotencyKey = stripe.String("voiced-customer-" + strconv.FormatInt(orgID, 10))
	c, err := s.sc.V1Customers.Create(ctx, p)
	if err != nil {
		return "", Classify(err)
	}
	return c.ID, nil
}

// Charge is one payment to take.
type Charge struct {
	OrgID         int64
	Customer      string
	PaymentMethod string
	AmountCents   int64
	// OffSession is true for auto-reloads: the user is not there to
	// authenticate, so a 3-D Secure demand comes back as an error.
	OffSession bool
	// IdempotencyKey makes retries of this charge safe. Required.
	IdempotencyKey string
	Purpose        storage.PaymentPurpose
	ReloadID       string
}

// Charge creates and confirms a PaymentIntent in USD for c. Redirect-based
// payment methods are excluded: the API has no page to return to.
func (s *Stripe) Charge(ctx context.Context, c Charge) (Intent, error) {
	if c.IdempotencyKey == "" {
		return Intent{}, errors.New("payment: charge without an idempotency key")
	}
	meta := map[string]string{MetaOrgID: strconv.FormatInt(c.OrgID, 10), MetaPurpose: string(c.Purpose)}
	if c.ReloadID != "" {
		meta[MetaReloadID] = c.ReloadID
	}
	p := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(c.AmountCents),
		Currency:      stripe.String(string(stripe.CurrencyUSD)),
		Customer:      stripe.String(c.Customer),
		PaymentMethod: stripe.String(c.PaymentMethod),
		Confirm:       stripe.Bool(true),
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{
			Enabled: stripe.Bool(true), AllowRedirects: stripe.String("never"),
		},
		Metadata: meta,
	}
	if c.OffSession {
		p.OffSession = stripe.Bool(true)
	}
	p.Context = ctx
	p.IdempotencyKey = stripe.String(c.IdempotencyKey)
	pi, err := s.sc.V1PaymentIntents.Create(ctx, p)
	if err != nil {
		return Intent{}, Classify(err)
	}
	return Intent{ID: pi.ID, Status: string(pi.Status), ClientSecret: pi.ClientSecret}, nil
}

// SetupIntent creates a SetupIntent that saves a card of customer for
// off-session use (auto-reload). The client confirms it with Stripe's
// client library, then sets the card as default.
func (s *Stripe) SetupIntent(ctx context.Context, orgID int64, customer string) (Intent, error) {
	p := &stripe.SetupIntentCreateParams{
		Customer: stripe.String(customer),
		Usage:    stripe.String(string(stripe.SetupIntentUsageOffSession)),
		AutomaticPaymentMethods: &stripe.SetupIntentCreateAutomaticPaymentMethodsParams{
			Enabled: stripe.Bool(true), AllowRedirects: stripe.String("never"),
		},
		Metadata: map[string]string{MetaOrgID: strconv.FormatInt(orgID, 10)},
	}
	p.Context = ctx
	si, err := s.sc.V1SetupIntents.Create(ctx, p)
	if err != nil {
		return Intent{}, Classify(err)
	}
	return Intent{ID: si.ID, Status: string(si.Status), ClientSecret: si.ClientSecret}, nil
}

// AttachMethod makes sure payment method pm belongs to customer: a card
// saved through a SetupIntent already does; a bare one is attached; one
// that belongs to another customer is refused (422).
func (s *Stripe) AttachMethod(ctx context.Context, customer, pm string) error {
	rp := &stripe.PaymentMethodRetrieveParams{}
	rp.Context = ctx
	m, err := s.sc.V1PaymentMethods.Retrieve(ctx, pm, rp)
	if err != nil {
		return Classify(err)
	}
	if m.Customer != nil && m.Customer.ID != "" {
		if m.Customer.ID == customer {
			return nil
		}
		return Invalid("This payment method belongs to another customer.", nil)
	}
	ap := &stripe.PaymentMethodAttachParams{Customer: stripe.String(customer)}
	ap.Context = ctx
	if _, err := s.sc.V1PaymentMethods.Attach(ctx, pm, ap); err != nil {
		return Classify(err)
	}
	return nil
}

// ParseEvent verifies a provider event (the Stripe-Signature header over
// the raw payload, within the tolerance) and reduces it to what billing
// acts on. Events of other types come back as storage.EventOther.
func (s *Stripe) ParseEvent(payload []byte, header string) (storage.ProviderEvent, error) {
	if s.secret == "" {
		return storage.ProviderEvent{}, ErrBadSignature
	}
	ev, err := stripe.ConstructEvent(payload, header, s.secret, stripe.WithTolerance(s.tolerance), stripe.WithIgnoreAPIVersionMismatch())
	if err != nil {
		return storage.ProviderEvent{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	out := storage.ProviderEvent{ID: ev.ID, Type: string(ev.Type), Kind: storage.EventOther}
	if ev.Data == nil {
		return out, nil
	}
	switch ev.Type {
	case "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled":
		var pi stripe.PaymentIntent
		if err := json.Unmarshal(ev.Data.Raw, &pi); err != nil {
			return out, fmt.Errorf("payment: event %s: %w", ev.ID, err)
		}
		out.Kind = storage.EventPaymentFailed
		if ev.Type == "payment_intent.succeeded" {
			out.Kind = storage.EventPaymentSucceeded
		}
		out.PaymentID, out.Status = pi.ID, string(pi.Status)
		out.AmountCents = pi.AmountReceived
		if out.AmountCents == 0 {
			out.AmountCents = pi.Amount
		}
		out.OrgID, _ = strconv.ParseInt(pi.Metadata[MetaOrgID], 10, 64)
		out.Purpose = storage.PaymentPurpose(pi.Metadata[MetaPurpose])
		out.ReloadID = pi.Metadata[MetaReloadID]
	case "setup_intent.succeeded":
		var si stripe.SetupIntent
		if err := json.Unmarshal(ev.Data.Raw, &si); err != nil {
			return out, fmt.Errorf("payment: event %s: %w", ev.ID, err)
		}
		out.Kind = storage.EventSetupSucceeded
		if si.Customer != nil {
			out.CustomerID = si.Customer.ID
		}
		if si.PaymentMethod != nil {
			out.PaymentMethod = si.PaymentMethod.ID
		}
		out.OrgID, _ = strconv.ParseInt(si.Metadata[MetaOrgID], 10, 64)
	}
	return out, nil
}
