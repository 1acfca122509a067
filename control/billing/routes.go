package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/storage"
)

// Provider is what the billing routes need from the payment provider
// (payment.Stripe).
type Provider interface {
	Customer(ctx context.Context, orgID int64, name string) (string, error)
	Charge(ctx context.Context, c payment.Charge) (payment.Intent, error)
	SetupIntent(ctx context.Context, orgID int64, customer string) (payment.Intent, error)
	AttachMethod(ctx context.Context, customer, pm string) error
	ParseEvent(payload []byte, header string) (storage.ProviderEvent, error)
}

// AccountStore is what the billing routes need from an org's billing
// account.
type AccountStore interface {
	BillingAccount(ctx context.Context, orgID int64) (storage.BillingAccount, error)
	UpdateAutoReload(ctx context.Context, orgID int64, p storage.AutoReloadPatch) (storage.BillingAccount, error)
	SetProviderCustomer(ctx context.Context, orgID int64, customerID string) (string, error)
	SetDefaultPaymentMethod(ctx context.Context, orgID int64, pm string) (storage.BillingAccount, error)
}

// PaymentStore records payments and reads the ledger.
type PaymentStore interface {
	RecordPayment(ctx context.Context, p storage.Payment) (credited bool, err error)
	ApplyProviderEvent(ctx context.Context, ev storage.ProviderEvent) (applied bool, err error)
	Transactions(ctx context.Context, orgID int64, limit, offset int) ([]storage.Transaction, error)
}

// handlers holds the billing routes' collaborators; pay is nil when no
// provider is configured.
type handlers struct {
	log      *slog.Logger
	store    AccountStore
	payments PaymentStore
	pay      Provider
}

// Routes returns the /v1/billing routes. pay may be nil: without a payment
// provider, top-ups and card routes answer 503.
func Routes(log *slog.Logger, accounts AccountStore, payments PaymentStore, pay Provider) []api.Route {
	h := &handlers{log: log, store: accounts, payments: payments, pay: pay}
	errs := []int{402, 422, 502, 503}
	return []api.Route{
		{Method: "GET", Path: "/v1/billing", Summary: "The organization's billing account", Tag: "billing", Auth: api.AuthOrg, ResSchema: "BillingAccount", Handler: h.get},
		{Method: "PATCH", Path: "/v1/billing", Summary: "Change auto-reload settings; enabling needs a default payment method (422)", Tag: "billing", Auth: api.AuthOrg, ReqSchema: "BillingPatch", ResSchema: "BillingAccount", Errors: []int{400, 422}, Handler: h.patch},
		{Method: "POST", Path: "/v1/billing/top-up", Summary: "Charge the card and credit the balance (synchronously when the payment succeeds)", Tag: "billing", Auth: api.AuthOrg, ReqSchema: "TopUpInput", ResSchema: "TopUp", ResStatus: 201, Errors: append([]int{400}, errs...), Handler: h.topUp, PaymentErrors: true},
		{Method: "POST", Path: "/v1/billing/setup-intent", Summary: "Start saving a card (confirm it client-side, then set it as default)", Tag: "billing", Auth: api.AuthOrg, ResSchema: "SetupIntent", Errors: errs, Handler: h.setupIntent, PaymentErrors: true},
		{Method: "POST", Path: "/v1/billing/default-payment-method", Summary: "Make a saved card the default payment method", Tag: "billing", Auth: api.AuthOrg, ReqSchema: "DefaultPaymentMethodInput", ResSchema: "BillingAccount", Errors: append([]int{400}, errs...), Handler: h.setDefault, PaymentErrors: true},
		{Method: "GET", Path: "/v1/billing/transactions", Summary: "Ledger entries, newest first (query limit 1-500, default 50; offset)", Tag: "billing", Auth: api.AuthOrg, ResSchema: "Transaction", ResList: true, Errors: []int{400}, Handler: h.transactions},
		{Method: "POST", Path: "/v1/billing/provider-events", Summary: "Payment provider event receiver (Stripe-Signature verified; no credential)", Tag: "billing", ResSchema: "ProviderEventAck", Errors: []int{400, 500, 503}, Handler: h.providerEvent},
	}
}

type billingView struct {
	BalanceCents                int64  `json:"balance_cents"`
	BalanceUSD                  string `json:"balance_usd"`
	Currency                    string `json:"currency"`
	AutoReloadEnabled           bool   `json:"auto_reload_enabled"`
	AutoReloadMinimumCents      int64  `json:"auto_reload_minimum_cents"`
	AutoReloadAmountCents       int64  `json:"auto_reload_amount_cents"`
	AutoReloadMonthlyLimitCents *int64 `json:"auto_reload_monthly_limit_cents"`
	HasPaymentMethod            bool   `json:"has_payment_method"`
	HasEverToppedUp             bool   `json:"has_ever_topped_up"`
}

// usd formats cents as a decimal dollar string ("12.05").
func usd(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

func viewBilling(a storage.BillingAccount) billingView {
	return billingView{BalanceCents: a.BalanceCents, BalanceUSD: usd(a.BalanceCents), Currency: "usd",
		AutoReloadEnabled: a.AutoReloadEnabled, AutoReloadMinimumCents: a.AutoReloadMinimumCents, AutoReloadAmountCents: a.AutoReloadAmountCents,
		AutoReloadMonthlyLimitCents: a.AutoReloadMonthlyLimitCents, HasPaymentMethod: a.DefaultPaymentMethod != "", HasEverToppedUp: a.HasEverToppedUp}
}

func (h *handlers) get(c fiber.Ctx, p *storage.Principal) error {
	a, err := h.store.BillingAccount(c.Context(), p.OrgID)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewBilling(a))
}

type billingPatch struct {
	Enabled      *bool           `json:"auto_reload_enabled"`
	MinimumCents *int64          `json:"auto_reload_minimum_cents"`
	AmountCents  *int64          `json:"auto_reload_amount_cents"`
	MonthlyLimit json.RawMessage `json:"auto_reload_monthly_limit_cents"`
}

func (h *handlers) patch(c fiber.Ctx, p *storage.Principal) error {
	var in billingPatch
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	enabling := in.Enabled != nil && *in.Enabled
	if in.MinimumCents == nil && enabling {
		f.Add("auto_reload_minimum_cents", "This field is required when enabling auto-reload.")
	} else if in.MinimumCents != nil && *in.MinimumCents < 0 {
		f.Add("auto_reload_minimum_cents", "Ensure this value is greater than or equal to 0.")
	}
	if in.AmountCents == nil && enabling {
		f.Add("auto_reload_amount_cents", "This field is required when enabling auto-reload.")
	} else if in.AmountCents != nil && *in.AmountCents <= 0 {
		f.Add("auto_reload_amount_cents", "Ensure this value is greater than or equal to 1.")
	}
	patch := storage.AutoReloadPatch{Enabled: in.Enabled, MinimumCents: in.MinimumCents, AmountCents: in.AmountCents}
	if in.MonthlyLimit != nil {
		patch.SetMonthlyLimit = true
		if string(in.MonthlyLimit) != "null" {
			var v int64
			if err := json.Unmarshal(in.MonthlyLimit, &v); err != nil {
				f.Add("auto_reload_monthly_limit_cents", "Must be an integer or null.")
			} else if v < 0 {
				f.Add("auto_reload_monthly_limit_cents", "Ensure this value is greater than or equal to 0.")
			} else {
				patch.MonthlyLimitCents = &v // 0 is stored as null: no cap
			}
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	a, err := h.store.UpdateAutoReload(c.Context(), p.OrgID, patch)
	if errors.Is(err, storage.ErrNoPaymentMethod) {
		return api.Err(http.StatusUnprocessableEntity, "Auto-reload needs a default payment method: save a card (setup intent, then default payment method) before enabling it.")
	}
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewBilling(a))
}

// provider returns the payment provider or the 503 of an unconfigured one.
func (h *handlers) provider() (Provider, error) {
	if h.pay == nil {
		return nil, payment.Unavailable(payment.ErrNotConfigured)
	}
	return h.pay, nil
}

// customer returns the org's provider customer, creating it on first use.
func (h *handlers) customer(ctx context.Context, pay Provider, orgID int64) (string, error) {
	a, err := h.store.BillingAccount(ctx, orgID)
	if err != nil {
		return "", err
	}
	if a.ProviderCustomerID != "" {
		return a.ProviderCustomerID, nil
	}
	id, err := pay.Customer(ctx, orgID, fmt.Sprintf("voiced org %d", orgID))
	if err != nil {
		return "", err
	}
	return h.store.SetProviderCustomer(ctx, orgID, id)
}

type topUpInput struct {
	AmountCents     *int64  `json:"amount_cents"`
	PaymentMethodID *string `json:"payment_method_id"`
}

type intentView struct {
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	SetupIntentID   string `json:"setup_intent_id,omitempty"`
	Status          string `json:"status"`
	ClientSecret    string `json:"client_secret"`
}

func (h *handlers) topUp(c fiber.Ctx, p *storage.Principal) error {
	var in topUpInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	switch {
	case in.AmountCents == nil:
		return api.FieldErr("amount_cents", "This field is required.")
	case *in.AmountCents < 1:
		return api.FieldErr("amount_cents", "Ensure this value is greater than or equal to 1.")
	}
	pay, err := h.provider()
	if err != nil {
		return err
	}
	ctx := c.Context()
	a, err := h.store.BillingAccount(ctx, p.OrgID)
	if err != nil {
		return api.StoreErr(err)
	}
	pm := a.DefaultPaymentMethod
	if in.PaymentMethodID != nil && strings.TrimSpace(*in.PaymentMethodID) != "" {
		pm = strings.TrimSpace(*in.PaymentMethodID)
	}
	if pm == "" {
		return payment.Invalid("There is no payment method: save a card or send payment_method_id.", nil)
	}
	cus, err := h.customer(ctx, pay, p.OrgID)
	if err != nil {
		return err
	}
	// A client retrying the same request sends the same Idempotency-Key
	// and is not charged twice; without one every request is a new charge.
	key := "voiced-topup-" + storage.NewUUID()
	if k := strings.TrimSpace(c.Get("Idempotency-Key")); k != "" && len(k) <= 200 {
		key = "voiced-topup-" + strconv.FormatInt(p.OrgID, 10) + "-" + k
	}
	in2, err := pay.Charge(ctx, payment.Charge{OrgID: p.OrgID, Customer: cus, PaymentMethod: pm, AmountCents: *in.AmountCents,
		IdempotencyKey: key, Purpose: storage.PurposeTopUp})
	if err != nil {
		return err
	}
	// succeeded credits now; anything else waits for the provider's event.
	if _, err := h.payments.RecordPayment(ctx, storage.Payment{ID: in2.ID, OrgID: p.OrgID, Purpose: storage.PurposeTopUp,
		AmountCents: *in.AmountCents, Status: in2.Status}); err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(intentView{PaymentIntentID: in2.ID, Status: in2.Status, ClientSecret: in2.ClientSecret})
}

func (h *handlers) setupIntent(c fiber.Ctx, p *storage.Principal) error {
	pay, err := h.provider()
	if err != nil {
		return err
	}
	cus, err := h.customer(c.Context(), pay, p.OrgID)
	if err != nil {
		return err
	}
	si, err := pay.SetupIntent(c.Context(), p.OrgID, cus)
	if err != nil {
		return err
	}
	return c.JSON(intentView{SetupIntentID: si.ID, Status: si.Status, ClientSecret: si.ClientSecret})
}

type defaultPMInput struct {
	PaymentMethodID *string `json:"payment_method_id"`
}

func (h *handlers) setDefault(c fiber.Ctx, p *storage.Principal) error {
	var in defaultPMInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	if in.PaymentMethodID == nil {
		return api.FieldErr("payment_method_id", "This field is required.")
	}
	pm := strings.TrimSpace(*in.PaymentMethodID)
	if pm == "" || len(pm) > 255 {
		return api.FieldErr("payment_method_id", "Enter a payment method id.")
	}
	pay, err := h.provider()
	if err != nil {
		return err
	}
	cus, err := h.customer(c.Context(), pay, p.OrgID)
	if err != nil {
		return err
	}
	if err := pay.AttachMethod(c.Context(), cus, pm); err != nil {
		return err
	}
	a, err := h.store.SetDefaultPaymentMethod(c.Context(), p.OrgID, pm)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewBilling(a))
}

type transactionView struct {
	ID                int64   `json:"id"`
	Kind              string  `json:"kind"`
	AmountCents       int64   `json:"amount_cents"`
	BalanceAfterCents int64   `json:"balance_after_cents"`
	Description       string  `json:"description"`
	Reference         *string `json:"reference"`
	CreatedAt         string  `json:"created_at"`
}

// pageParams parses limit (1..max, default def) and offset (>= 0).
func pageParams(c fiber.Ctx, def, max int) (int, int, error) {
	f := api.Fields{}
	limit, offset := def, 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			f.Add("limit", fmt.Sprintf("Must be an integer from 1 to %d.", max))
		}
		limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			f.Add("offset", "Must be an integer greater than or equal to 0.")
		}
		offset = n
	}
	return limit, offset, f.Err()
}

func (h *handlers) transactions(c fiber.Ctx, p *storage.Principal) error {
	limit, offset, err := pageParams(c, 50, 500)
	if err != nil {
		return err
	}
	txs, err := h.payments.Transactions(c.Context(), p.OrgID, limit, offset)
	if err != nil {
		return api.StoreErr(err)
	}
	out := make([]transactionView, 0, len(txs))
	for _, t := range txs {
		v := transactionView{ID: t.ID, Kind: string(t.Kind), AmountCents: t.AmountCents, BalanceAfterCents: t.BalanceAfterCents,
			Description: t.Description, CreatedAt: api.TS(t.CreatedAt)}
		if t.Reference != "" {
			r := t.Reference
			v.Reference = &r
		}
		out = append(out, v)
	}
	return c.JSON(out)
}

// providerEvent receives the payment provider's events. The signature over
// the raw body is the credential. Each event applies once: a replay, or a
// second event for an already credited payment, changes nothing and is
// acknowledged so the provider stops retrying.
func (h *handlers) providerEvent(c fiber.Ctx, _ *storage.Principal) error {
	if h.pay == nil {
		return api.Err(http.StatusServiceUnavailable, "No payment provider is configured.")
	}
	ev, err := h.pay.ParseEvent(c.Body(), c.Get("Stripe-Signature"))
	if err != nil {
		if errors.Is(err, payment.ErrBadSignature) {
			return api.Err(http.StatusBadRequest, "The event signature does not verify.")
		}
		return api.Err(http.StatusBadRequest, "The event could not be read.")
	}
	applied, err := h.payments.ApplyProviderEvent(c.Context(), ev)
	switch {
	case errors.Is(err, storage.ErrUnknownPayment):
		if h.log != nil {
			h.log.Warn("provider event for an unknown payment ignored", "event_id", ev.ID, "payment_id", ev.PaymentID)
		}
	case err != nil:
		return err // 500: the provider retries
	}
	return c.JSON(fiber.Map{"received": true, "applied": applied})
}
