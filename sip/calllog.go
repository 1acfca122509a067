package sip

import (
	"context"
	"time"
)

// CallLog records how calls end: the control plane's call record. The
// Server calls Finish exactly once per admitted or dialed call.
type CallLog interface {
	Finish(ctx context.Context, callID int64, end End) error
}

// Call statuses of End (the spec's call status values).
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// End reasons this package reports.
const (
	// ReasonCallerHangup: the caller of an inbound call sent BYE (or
	// CANCEL while ringing).
	ReasonCallerHangup = "caller_hangup"
	// ReasonCalleeHangup: the called party of an outbound call sent BYE.
	ReasonCalleeHangup = "callee_hangup"
	// ReasonAgentEnd: Call.Hangup ended the call (the agent or the API).
	ReasonAgentEnd = "agent_end"
	// ReasonTimeout: the admission's maximum duration ran out.
	ReasonTimeout = "timeout"
	// ReasonTransfer: a REFER transfer succeeded, or a bridged transfer
	// ended (either side hung up).
	ReasonTransfer = "ai_transfer"
	// ReasonSessionExpired: the peer stopped refreshing the session
	// (RFC 4028) or never acknowledged our 200 OK.
	ReasonSessionExpired = "session_expired"
	// ReasonShutdown: the node shut down with the call still up.
	ReasonShutdown = "node_shutdown"
	// ReasonBusy, ReasonNoAnswer, ReasonRejected and ReasonFailed end
	// outbound calls that were never answered: 486/600, ring timeout or
	// 408/480/487, 603, anything else.
	ReasonBusy     = "busy"
	ReasonNoAnswer = "no_answer"
	ReasonRejected = "rejected"
	ReasonFailed   = "failed"
	// ReasonMediaFailed: no media session could be opened or started.
	ReasonMediaFailed = "media_failed"
)

// End is how a call ended.
type End struct {
	// Status is StatusCompleted for calls that were answered, else
	// StatusFailed.
	Status string
	// Reason is the public end_reason.
	Reason string
	// Detail is the internal cause, for operators: the SIP response or
	// error.
	Detail string
	// At is when the call ended.
	At time.Time
	// Answered is when the call was answered; zero if never.
	Answered time.Time
	// Code is the final SIP status of an unanswered call, 0 otherwise.
	Code int
}
