package control

import "errors"

// Refusals of CallLog.Admit. The telephony side maps them to SIP final
// responses (unknown number 404, no agent or no balance 480); the real
// cause is kept on the call record when the org is known.
var (
	// ErrUnknownNumber means no organization holds the dialed number.
	ErrUnknownNumber = errors.New("control: the dialed number is not in service")
	// ErrNumberInactive means the number is held but not active.
	ErrNumberInactive = errors.New("control: the dialed number is not active")
	// ErrNoAgent means the number has no inbound agent.
	ErrNoAgent = errors.New("control: no agent answers this number")
	// ErrUnknownAgent means the agent does not exist in the organization.
	ErrUnknownAgent = errors.New("control: agent not found")
	// ErrInsufficientBalance means the organization's balance is zero.
	ErrInsufficientBalance = errors.New("control: insufficient balance")
	// ErrBadEvent means an event or call end is malformed.
	ErrBadEvent = errors.New("control: malformed call event")
)
