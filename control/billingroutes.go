package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/storage"
)

// payments is what the billing routes need from the payment provider
// (payment.Stripe).
type payments interface {
	Customer(ctx context.Context, orgID int64, name string) (string, error)
	Charge(ctx context.Context, c payment.Charge) (payment.Intent, error)
	SetupIntent(ctx context.Context, orgID int64, customer string) (payment.Intent, error)
	AttachMethod(ctx context.Context, customer, pm string) error
	ParseEvent(payload []byte, header string) (storage.ProviderEvent, error)
}

// billingAPI holds the billing routes' collaborators; pay is nil when no
// provider is configured.
type billingAPI struct {
	s   *Server
	pay payments
}

func (s *Server) registerBillingRoutes() {
	b := &billingAPI{s: s}
	if st, err := payment.NewStripe(s.cfg.Payments); err == nil {
		b.pay = st
	} else if !errors.Is(err, payment.ErrNotConfigured) && s.log != nil {
		s.log.Error("payment provider not usable; top-ups answer 503", "err", err.Error())
	}
	pay := []int{402, 422, 502, 503}
	s.add(route{method: "GET", path: "/v1/billing", summary: "The organization's billing account", tag: "billing", auth: authOrg, resSchema: "BillingAccount", handler: b.get})
	s.add(route{method: "PATCH", path: "/v1/billing", summary: "Change auto-reload settings; enabling needs a default payment method (422)", tag: "billing", auth: authOrg, reqSchema: "BillingPatch", resSchema: "BillingAccount", errors: []int{400, 422}, handler: b.patch})
	s.add(route{method: "POST", path: "/v1/billing/top-up", summary: "Charge the card and credit the balance (synchronously when the payment succeeds)", tag: "billing", auth: authOrg, reqSchema: "TopUpInput", resSchema: "TopUp", resStatus: 201, errors: append([]int{400}, pay...), handler: b.topUp, paymentErrors: true})
	s.add(route{method: "POST", path: "/v1/billing/setup-intent", summary: "Start saving a card (confirm it client-side, then set it as default)", tag: "billing", auth: authOrg, resSchema: "SetupIntent", errors: pay, handler: b.setupIntent, paymentErrors: true})
	s.add(route{method: "POST", path: "/v1/billing/default-payment-method", summary: "Make a saved card the default payment method", tag: "billing", auth: authOrg, reqSchema: "DefaultPaymentMethodInput", resSchema: "BillingAccount", errors: append([]int{400}, pay...), handler: b.setDefault, paymentErrors: true})
	s.add(route{method: "GET", path: "/v1/billing/transactions", summary: "Ledger entries, newest first (query limit 1-500, default 50; offset)", tag: "billing", auth: authOrg, resSchema: "Transaction", resList: true, errors: []int{400}, handler: b.transactions})
	s.add(route{method: "POST", path: "/v1/billing/provider-events", summary: "Payment provider event receiver (Stripe-Signature verified; no credential)", tag: "billing", resSchema: "ProviderEventAck", errors: []int{400, 500, 503}, handler: b.providerEvent})
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

func (b *billingAPI) get(c fiber.Ctx, p *storage.Principal) error {
	a, err := b.s.store.BillingAccount(c.Context(), p.OrgID)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewBilling(a))
}

type billingPatch struct {
	Enabled      *bool           `json:"auto_reload_enabled"`
	MinimumCents *int64          `json:"auto_reload_minimum_cents"`
	AmountCents  *int64          `json:"auto_reload_amount_cents"`
	MonthlyLimit json.RawMessage `json:"auto_reload_monthly_limit_cents"`
}

func (b *billingAPI) patch(c fiber.Ctx, p *storage.Principal) error {
	var in billingPatch
	if err := decode(c, &in); err != nil {
		return err
	}
	f := fields{}
	enabling := in.Enabled != nil && *in.Enabled
	if in.MinimumCents == nil && enabling {
		f.add("auto_reload_minimum_cents", "This field is required when enabling auto-reload.")
	} else if in.MinimumCents != nil && *in.MinimumCents < 0 {
		f.add("auto_reload_minimum_cents", "Ensure this value is greater than or equal to 0.")
	}
	if in.AmountCents == nil && enabling {
		f.add("auto_reload_amount_cents", "This field is required when enabling auto-reload.")
	} else if in.AmountCents != nil && *in.AmountCents <= 0 {
		f.add("auto_reload_amount_cents", "Ensure this value is greater than or equal to 1.")
	}
	patch := storage.AutoReloadPatch{Enabled: in.Enabled, MinimumCents: in.MinimumCents, AmountCents: in.AmountCents}
	if in.MonthlyLimit != nil {
		patch.SetMonthlyLimit = true
		if string(in.MonthlyLimit) != "null" {
			var v int64
			if err := json.Unmarshal(in.MonthlyLimit, &v); err != nil {
				f.add("auto_reload_monthly_limit_cents", "Must be an integer or null.")
			} else if v < 0 {
				f.add("auto_reload_monthly_limit_cents", "Ensure this value is greater than or equal to 0.")
			} else {
				patch.MonthlyLimitCents = &v // 0 is stored as null: no cap
			}
		}
	}
	if err := f.err(); err != nil {
		return err
	}
	a, err := b.s.store.UpdateAutoReload(c.Context(), p.OrgID, patch)
	if errors.Is(err, storage.ErrNoPaymentMethod) {
		return apiErr(http.StatusUnprocessableEntity, "Auto-reload needs a default payment method: save a card (setup intent, then default payment method) before enabling it.")
	}
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewBilling(a))
}

// provider returns the payment provider or the 503 of an unconfigured one.
func (b *billingAPI) provider() (payments, error) {
	if b.pay == nil {
		return nil, payment.Unavailable(payment.ErrNotConfigured)
	}
	return b.pay, nil
}

// customer returns the org's provider customer, creating it on first use.
func (b *billingAPI) customer(ctx context.Context, pay payments, orgID int64) (string, error) {
	a, err := b.s.store.BillingAccount(ctx, orgID)
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
	return b.s.store.SetProviderCustomer(ctx, orgID, id)
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

func (b *billingAPI) topUp(c fiber.Ctx, p *storage.Principal) error {
	var in topUpInput
	if err := decode(c, &in); err != nil {
		return err
	}
	switch {
	case in.AmountCents == nil:
		return fieldErr("amount_cents", "This field is required.")
	case *in.AmountCents < 1:
		return fieldErr("amount_cents", "Ensure this value is greater than or equal to 1.")
	}
	pay, err := b.provider()
	if err != nil {
		return err
	}
	ctx := c.Context()
	a, err := b.s.store.BillingAccount(ctx, p.OrgID)
	if err != nil {
		return storeErr(err)
	}
	pm := a.DefaultPaymentMethod
	if in.PaymentMethodID != nil && strings.TrimSpace(*in.PaymentMethodID) != "" {
		pm = strings.TrimSpace(*in.PaymentMethodID)
	}
	if pm == "" {
		return payment.Invalid("There is no payment method: save a card or send payment_method_id.", nil)
	}
	cus, err := b.customer(ctx, pay, p.OrgID)
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
	if _, err := b.s.store.RecordPayment(ctx, storage.Payment{ID: in2.ID, OrgID: p.OrgID, Purpose: storage.PurposeTopUp,
		AmountCents: *in.AmountCents, Status: in2.Status}); err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(intentView{PaymentIntentID: in2.ID, Status: in2.Status, ClientSecret: in2.ClientSecret})
}

func (b *billingAPI) setupIntent(c fiber.Ctx, p *storage.Principal) error {
	pay, err := b.provider()
	if err != nil {
		return err
	}
	cus, err := b.customer(c.Context(), pay, p.OrgID)
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

func (b *billingAPI) setDefault(c fiber.Ctx, p *storage.Principal) error {
	var in defaultPMInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.PaymentMethodID == nil {
		return fieldErr("payment_method_id", "This field is required.")
	}
	pm := strings.TrimSpace(*in.PaymentMethodID)
	if pm == "" || len(pm) > 255 {
		return fieldErr("payment_method_id", "Enter a payment method id.")
	}
	pay, err := b.provider()
	if err != nil {
		return err
	}
	cus, err := b.customer(c.Context(), pay, p.OrgID)
	if err != nil {
		return err
	}
	if err := pay.AttachMethod(c.Context(), cus, pm); err != nil {
		return err
	}
	a, err := b.s.store.SetDefaultPaymentMethod(c.Context(), p.OrgID, pm)
	if err != nil {
		return storeErr(err)
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
	f := fields{}
	limit, offset := def, 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			f.add("limit", fmt.Sprintf("Must be an integer from 1 to %d.", max))
		}
		limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			f.add("offset", "Must be an integer greater than or equal to 0.")
		}
		offset = n
	}
	return limit, offset, f.err()
}

func (b *billingAPI) transactions(c fiber.Ctx, p *storage.Principal) error {
	limit, offset, err := pageParams(c, 50, 500)
	if err != nil {
		return err
	}
	txs, err := b.s.store.Transactions(c.Context(), p.OrgID, limit, offset)
	if err != nil {
		return storeErr(err)
	}
	out := make([]transactionView, 0, len(txs))
	for _, t := range txs {
		v := transactionView{ID: t.ID, Kind: string(t.Kind), AmountCents: t.AmountCents, BalanceAfterCents: t.BalanceAfterCents,
			Description: t.Description, CreatedAt: ts(t.CreatedAt)}
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
func (b *billingAPI) providerEvent(c fiber.Ctx, _ *storage.Principal) error {
	if b.pay == nil {
		return apiErr(http.StatusServiceUnavailable, "No payment provider is configured.")
	}
	ev, err := b.pay.ParseEvent(c.Body(), c.Get("Stripe-Signature"))
	if err != nil {
		if errors.Is(err, payment.ErrBadSignature) {
			return apiErr(http.StatusBadRequest, "The event signature does not verify.")
		}
		return apiErr(http.StatusBadRequest, "The event could not be read.")
	}
	applied, err := b.s.store.ApplyProviderEvent(c.Context(), ev)
	switch {
	case errors.Is(err, storage.ErrUnknownPayment):
		if b.s.log != nil {
			b.s.log.Warn("provider event for an unknown payment ignored", "event_id", ev.ID, "payment_id", ev.PaymentID)
		}
	case err != nil:
		return err // 500: the provider retries
	}
	return c.JSON(fiber.Map{"received": true, "applied": applied})
}
