package call

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	sessions "github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/media/realtime"
)

// Admitter admits calls: a refusal is one of calllog's Err* refusals.
type Admitter interface {
	Admit(ctx context.Context, r calllog.AdmitRequest) (control.Admission, error)
	// AdmitInline validates an inline realtime configuration and admits
	// a call with it; a bad configuration is an *api.Error with
	// Fields.
	AdmitInline(ctx context.Context, orgID int64, cfg json.RawMessage, room string) (control.Admission, error)
}

// Recorder appends to a call's record.
type Recorder interface {
	// Append adds events; ids make redelivery harmless.
	Append(ctx context.Context, callID int64, events []calllog.CallEvent) error
	// ToolEvent emits the call's tool webhook event of one tool run.
	ToolEvent(ctx context.Context, callID int64, r calllog.ToolRun) error
	// Answered records that the callee of an outbound call answered at
	// at: the call is billed from then, also when its node is lost
	// before it ends. It applies once.
	Answered(ctx context.Context, callID int64, at time.Time) error
}

// Finisher ends a call's record: Finish with how it ended (billing
// follows), Fail when its media never connected.
type Finisher interface {
	Finish(ctx context.Context, callID int64, end calllog.CallEnd) error
	Fail(ctx context.Context, callID int64, reason, detail string) error
}

// ToolExchanger runs a webhook-routed tool: the blocking tool exchange
// with the organization's webhook (spec 6.2).
type ToolExchanger interface {
	Tool(ctx context.Context, orgID int64, req webhook.ToolRequest) (webhook.ToolResponse, error)
}

// TrunkLookup finds the VoIP connection a number's calls come through.
type TrunkLookup interface {
	InboundTrunk(ctx context.Context, number string) (calllog.InboundTrunk, bool, error)
}

// Credentials checks a realtime socket's credential.
type Credentials interface {
	AuthenticateAPIKey(ctx context.Context, key string) (int64, error)
	ClaimRealtimeToken(ctx context.Context, token string) (control.RealtimeGrant, error)
}

// Control is the control plane as the live call reaches it. In serve it
// is control.CallLog (control/calllog: Admit, Record, Finish, Trunks), the
// webhook Exchanger (Tools) and control.Realtime (control/realtime:
// Credentials); a media node gets a
// network client for the same interfaces.
type Control struct {
	Admit       Admitter
	Record      Recorder
	Finish      Finisher
	Tools       ToolExchanger
	Trunks      TrunkLookup
	Credentials Credentials
	// MCP resolves agents' MCP tools (nil: none).
	MCP MCPCatalog
	// Knowledge searches agents' knowledge (nil: none).
	Knowledge Knowledge
}

// Slots bounds concurrent sessions per key (control/realtime.SessionSlots):
// Acquire returns sessions.ErrSessionLimit when every slot is taken.
type Slots interface {
	Acquire(ctx context.Context, key string, size int, ttl time.Duration) (token string, err error)
	Release(ctx context.Context, key, token string) error
	ExtendLease(ctx context.Context, key, token string, ttl time.Duration) error
}

// rtSlots adapts Slots to media/realtime's.
type rtSlots struct{ Slots }

func (s rtSlots) Acquire(ctx context.Context, key string, size int, ttl time.Duration) (string, error) {
	tok, err := s.Slots.Acquire(ctx, key, size, ttl)
	if errors.Is(err, sessions.ErrSessionLimit) {
		return "", realtime.ErrSessionLimit
	}
	return tok, err
}
