// Package payment is voiced's payment provider adapter: Stripe through
// stripe-go, pointed by configuration at the real API or at stripe-mock.
//
// It creates customers, confirms PaymentIntents (top-ups on-session,
// auto-reloads off-session), creates SetupIntents, attaches payment
// methods, verifies provider events, and turns every provider failure into
// an Error carrying the spec's payment error (section 7): its status,
// code, retryable flag and next action. Nothing here touches balances:
// crediting is storage's job, done once per payment.
//
// Every charge carries an idempotency key chosen by the caller (one per
// top-up request or auto-reload attempt), so a retried request never
// charges twice, and metadata naming the organization, so a provider event
// can credit the right org even if this process died before recording the
// payment.
package payment
