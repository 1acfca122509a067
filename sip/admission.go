package sip

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// Admitter decides whether an arriving call may proceed: the control
// plane's number → organization and agent lookup, balance and capacity
// checks. A refusal is one of ErrUnknownNumber, ErrNumberInactive,
// ErrNoAgent, ErrInsufficientBalance or ErrNoCapacity (wrapped or not);
// any other error is answered 500. The Admitter records refused calls
// itself when it can (with their real cause).
type Admitter interface {
	Admit(ctx context.Context, a Arrival) (Admission, error)
}

// Arrival describes an inbound INVITE.
type Arrival struct {
	// To is the dialed number, From the caller, both normalized to E.164
	// when they look like phone numbers (see Number).
	To, From string
	// Source is the address the INVITE came from.
	Source netip.AddrPort
	// Transport is "UDP", "TCP" or "TLS".
	Transport string
	// SIPCallID is the INVITE's Call-ID.
	SIPCallID string
}

// Admission is an admitted call.
type Admission struct {
	// CallID is the control plane's call id, used with CallLog.
	CallID int64
	// MaxDuration is the longest the call may last; the Server hangs up
	// (end reason "timeout") when it runs out. Zero means no limit.
	MaxDuration time.Duration
}

// refusal maps an admission error to a final response code, its reason
// phrase and the Reason header text.
func refusal(err error) (code int, phrase, text string) {
	switch {
	case errors.Is(err, ErrUnknownNumber):
		return 404, "Not Found", "number not in service"
	case errors.Is(err, ErrNumberInactive):
		return 480, "Temporarily Unavailable", "number inactive"
	case errors.Is(err, ErrNoAgent):
		return 480, "Temporarily Unavailable", "no agent"
	case errors.Is(err, ErrInsufficientBalance):
		return 480, "Temporarily Unavailable", "insufficient balance"
	case errors.Is(err, ErrNoCapacity):
		return 503, "Service Unavailable", "no capacity"
	case errors.Is(err, ErrSourceNotAllowed):
		return 403, "Forbidden", "source not allowed"
	}
	return 500, "Server Internal Error", "admission failed"
}
