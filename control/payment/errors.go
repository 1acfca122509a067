package payment

import (
	"errors"
	"net/http"

	"github.com/stripe/stripe-go/v85"
)

// The payment error codes of spec section 7.
const (
	CodeAuthenticationRequired = "payment_authentication_required"
	CodeCardDeclined           = "card_declined"
	CodeRequestInvalid         = "billing_request_invalid"
	CodeProviderUnavailable    = "billing_provider_unavailable"
	CodeProviderError          = "billing_provider_error"
)

// The next actions of spec section 7.
const (
	NextAuthenticate        = "authenticate_payment"
	NextUpdatePaymentMethod = "update_payment_method"
	NextRetry               = "retry_payment"
)

// ErrNotConfigured means no payment provider is configured: top-ups answer
// 503 billing_provider_unavailable and operators add credit with
// `voiced admin add-credit`.
var ErrNotConfigured = errors.New("payment: no payment provider configured")

// ErrBadSignature means a provider event's signature did not verify (or
// its timestamp is outside the tolerance): the event is refused.
var ErrBadSignature = errors.New("payment: event signature does not verify")

// Error is a provider failure as the API reports it. Message and Detail
// are written for users; the provider's own error is kept in Err for logs.
type Error struct {
	Status     int
	Code       string
	Message    string
	Detail     string
	Retryable  bool
	NextAction string
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "payment: " + e.Code + ": " + e.Err.Error()
	}
	return "payment: " + e.Code
}

// Unwrap returns the provider error.
func (e *Error) Unwrap() error { return e.Err }

// Unavailable is the error for a provider that cannot be reached or is
// not configured.
func Unavailable(err error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeProviderUnavailable, Retryable: true, NextAction: NextRetry,
		Message: "The payment provider is unavailable.",
		Detail:  "Payments cannot be processed right now. Try again in a few minutes.", Err: err}
}

// Invalid is the error for a request the provider (or voiced, before
// asking it) refuses as unprocessable.
func Invalid(detail string, err error) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: CodeRequestInvalid, NextAction: NextUpdatePaymentMethod,
		Message: "The payment request was rejected.", Detail: detail, Err: err}
}

// Classify maps a provider error to the spec's payment errors:
//
//	card error, authentication_required     402 payment_authentication_required
//	any other card error (a bank decline)   402 card_declined
//	rate limit, lock timeout, 502/503/504,
//	network errors and timeouts             503 billing_provider_unavailable
//	invalid request, idempotency error      422 billing_request_invalid
//	anything else (500, 401 bad API key...) 502 billing_provider_error
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, ErrNotConfigured) {
		return Unavailable(err)
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		// No answer from the provider: connection refused, DNS, timeout,
		// or the request's own deadline.
		return Unavailable(err)
	}
	switch {
	case se.Type == stripe.ErrorTypeCard && (se.Code == stripe.ErrorCodeAuthenticationRequired || se.DeclineCode == stripe.DeclineCodeAuthenticationRequired):
		return &Error{Status: http.StatusPaymentRequired, Code: CodeAuthenticationRequired, Retryable: true, NextAction: NextAuthenticate,
			Message: "The payment needs authentication.",
			Detail:  "Your bank asks you to authenticate this payment (3-D Secure). Complete the authentication, then try again.", Err: err}
	case se.Type == stripe.ErrorTypeCard:
		return &Error{Status: http.StatusPaymentRequired, Code: CodeCardDeclined, NextAction: NextUpdatePaymentMethod,
			Message: "The card was declined.",
			Detail:  "Your bank declined the payment. Use another payment method or contact your bank.", Err: err}
	case se.HTTPStatusCode == http.StatusTooManyRequests || se.Code == stripe.ErrorCodeRateLimit || se.Code == stripe.ErrorCodeLockTimeout,
		se.HTTPStatusCode == http.StatusBadGateway, se.HTTPStatusCode == http.StatusServiceUnavailable, se.HTTPStatusCode == http.StatusGatewayTimeout:
		return Unavailable(err)
	case se.HTTPStatusCode == http.StatusUnauthorized, se.HTTPStatusCode == http.StatusForbidden:
		// voiced's own key is wrong or lacks permission: not the user's
		// request, and an operator must fix it.
	case se.Type == stripe.ErrorTypeInvalidRequest, se.Type == stripe.ErrorTypeIdempotency:
		return Invalid("The payment provider rejected the request. Check the payment method and the amount.", err)
	}
	return &Error{Status: http.StatusBadGateway, Code: CodeProviderError, Retryable: true, NextAction: NextRetry,
		Message: "The payment provider returned an error.",
		Detail:  "The payment could not be processed because of an error at the payment provider. Try again.", Err: err}
}
