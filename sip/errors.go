package sip

import (
	"errors"
	"strconv"
)

// Refusals an Admitter returns. The Server answers them with the final
// responses noted, each with a Reason header (RFC 3326).
var (
	// ErrUnknownNumber: no one holds the dialed number. 404 Not Found.
	ErrUnknownNumber = errors.New("sip: the dialed number is not in service")
	// ErrNumberInactive: the number is held but not active. 480.
	ErrNumberInactive = errors.New("sip: the dialed number is not active")
	// ErrNoAgent: no agent answers the number. 480 Temporarily Unavailable.
	ErrNoAgent = errors.New("sip: no agent answers this number")
	// ErrInsufficientBalance: the organization cannot pay for the call.
	// 480 Temporarily Unavailable, not 503: a 503 makes carriers fail
	// over to another node, which would refuse it the same way.
	ErrInsufficientBalance = errors.New("sip: insufficient balance")
	// ErrNoCapacity: this node takes no more calls now. 503 Service
	// Unavailable with Retry-After, so the carrier tries another node.
	ErrNoCapacity = errors.New("sip: no capacity for another call")
)

var (
	// ErrSourceNotAllowed: a request for a number on a VoIP connection
	// came from an address the connection does not allow. 403 Forbidden.
	ErrSourceNotAllowed = errors.New("sip: source address not allowed for this number")
	// ErrClosed: the server is shutting down or closed.
	ErrClosed = errors.New("sip: server closed")
	// ErrCallEnded: the call ended before the operation completed.
	ErrCallEnded = errors.New("sip: call ended")
	// ErrBadTrunk: a trunk's host, port or transport is unusable.
	ErrBadTrunk = errors.New("sip: bad trunk settings")
)

// ResponseError is a final SIP response that ended an operation (an
// outbound INVITE, a REFER, a transfer reported by NOTIFY, an OPTIONS).
type ResponseError struct {
	// Op is the request: "INVITE", "REFER", "transfer"...
	Op     string
	Code   int
	Reason string
}

// Error implements error.
func (e *ResponseError) Error() string {
	return "sip: " + e.Op + " answered " + strconv.Itoa(e.Code) + " " + e.Reason
}
