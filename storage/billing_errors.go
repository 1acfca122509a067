package storage

import "errors"

// Billing rule violations, checked inside the transaction that would break
// them.
var (
	// ErrNoPaymentMethod means auto-reload cannot be enabled (or a reload
	// charged) because the org has no default payment method.
	ErrNoPaymentMethod = errors.New("storage: no default payment method")
	// ErrUnknownPayment means a provider event names a payment this server
	// did not create and carries no organization to credit.
	ErrUnknownPayment = errors.New("storage: payment is not ours")
)
