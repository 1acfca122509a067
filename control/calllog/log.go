package calllog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// CallStore keeps calls, their events and their billing, and finds the
// number a call came in on.
type CallStore interface {
	PhoneNumberByE164(ctx context.Context, number string) (storage.PhoneNumber, error)
	CreateCall(ctx context.Context, c storage.Call) (storage.Call, error)
	Call(ctx context.Context, orgID, id int64) (storage.Call, error)
	CallByID(ctx context.Context, id int64) (storage.Call, error)
	UpdateCall(ctx context.Context, id int64, fn func(c *storage.Call) error) (before, after storage.Call, err error)
	AppendCallEvents(ctx context.Context, id int64, events []storage.CallEventRow) (int, error)
	BillCall(ctx context.Context, id int64, ch storage.CallCharge) (storage.CallBill, error)
	UnbilledCalls(ctx context.Context, limit int) ([]storage.Call, error)
	SetCallNode(ctx context.Context, id int64, node string) error
	AnswerCall(ctx context.Context, id int64, at time.Time) (bool, error)
}

// AgentLookup reads an organization's agent.
type AgentLookup interface {
	Agent(ctx context.Context, orgID, id int64) (storage.Agent, error)
}

// BalanceLookup reads an organization's balance in cents.
type BalanceLookup interface {
	Balance(ctx context.Context, orgID int64) (int64, error)
}

// TrunkLookup reads an organization's VoIP connection.
type TrunkLookup interface {
	VoIPConnection(ctx context.Context, orgID, id int64) (storage.VoIPConnection, error)
}

// Emitter emits an organization's webhook event.
type Emitter interface {
	Emit(ctx context.Context, orgID int64, typ string, data any) (storage.Event, error)
}

// Stores are the storage the call log uses; all are required.
type Stores struct {
	Calls    CallStore
	Agents   AgentLookup
	Balances BalanceLookup
	Trunks   TrunkLookup
	Events   Emitter
}

// Schema is what the log needs of the agent configuration C.
type Schema[C any] interface {
	// Decode reads a stored configuration over the defaults.
	Decode(raw []byte) (C, error)
	// Inline validates an inline configuration (a realtime session's);
	// messages are keyed prefix+field.
	Inline(raw json.RawMessage, prefix string) (C, api.Fields)
	// Snapshot is what a call record keeps of c.
	Snapshot(c C) Snapshot
}

// Snapshot is the configuration in effect at call time, kept on the call.
type Snapshot struct {
	Prompt, Product, Voice string
	Tools                  json.RawMessage
}

// Config holds the log's settings.
type Config struct {
	// Products is the price list by name; DefaultProduct, which must be
	// in it, prices calls whose product was dropped since.
	Products       map[string]Product
	DefaultProduct string
}

// Log is the control plane's side of a call's record: the live call
// (package call) admits a call, appends what happens during it, and
// finishes it. It implements call's small interfaces (Admitter, Recorder,
// Finisher, TrunkLookup) in process; a media node reaches the same
// interfaces over the network. Safe for concurrent use; every method is
// idempotent under redelivery where it matters (events carry ids, Finish
// applies once).
type Log[C any] struct {
	cfg    Config
	log    *slog.Logger
	st     Stores
	schema Schema[C]
	dialer Dialer[C]
}

// New returns the call log over stores. dialer places outbound calls; nil
// answers POST /v1/call with 503.
func New[C any](cfg Config, log *slog.Logger, st Stores, schema Schema[C], dialer Dialer[C]) *Log[C] {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Log[C]{cfg: cfg, log: log, st: st, schema: schema, dialer: dialer}
}

// product returns the price list entry of name; a product dropped from
// the configuration since the call started bills at the default product.
func (l *Log[C]) product(name *string) Product {
	if name != nil {
		if p, ok := l.cfg.Products[*name]; ok {
			return p
		}
	}
	return l.cfg.Products[l.cfg.DefaultProduct]
}

// Admit creates the call record of an arriving call after checking it may
// proceed: the number is held and active with an inbound agent (inbound),
// or the agent exists (test, web), and the balance is above zero. A
// refusal returns one of the Err* refusals; when the organization is
// known the refused call is still recorded as failed with the cause, and
// its id is returned with the error.
func (l *Log[C]) Admit(ctx context.Context, r AdmitRequest) (Admission[C], error) {
	c := storage.Call{Direction: r.Direction, FromNumber: r.From, ToNumber: r.To, StartTime: r.At, Status: storage.CallInProgress,
		IsSimulation: r.IsSimulation, IsScenarioCall: r.IsScenarioCall, AgentVariantID: r.AgentVariantID,
		AgentVariantLabel: optStr(r.AgentVariantLabel), MediaRoomName: optStr(r.MediaRoomName), MediaRoomSID: optStr(r.MediaRoomSID),
		WorkerExecutionName: optStr(r.WorkerExecution), NodeID: optStr(r.NodeID)}
	var refusal error
	switch r.Direction {
	case storage.DirectionInbound:
		n, err := l.st.Calls.PhoneNumberByE164(ctx, r.To)
		if errors.Is(err, storage.ErrNotFound) {
			return Admission[C]{}, ErrUnknownNumber
		}
		if err != nil {
			return Admission[C]{}, err
		}
		c.OrgID, c.PhoneNumberID = n.OrgID, &n.ID
		switch {
		case n.Status != storage.NumberActive:
			refusal = ErrNumberInactive
		case n.InboundAgentID == nil:
			refusal = ErrNoAgent
		default:
			c.AgentID = n.InboundAgentID
		}
	case storage.DirectionTest, storage.DirectionWeb:
		c.OrgID, c.AgentID = r.OrgID, &r.AgentID
		if c.FromNumber == "" {
			c.FromNumber = "internal:" + r.Direction
		}
		if c.ToNumber == "" {
			c.ToNumber = "agent:" + strconv.FormatInt(r.AgentID, 10)
		}
	default:
		return Admission[C]{}, fmt.Errorf("%w: direction %q cannot be admitted (outbound calls start with POST /v1/call)", ErrBadEvent, r.Direction)
	}
	var cfg C
	var adm Admission[C]
	if refusal == nil {
		a, err := l.st.Agents.Agent(ctx, c.OrgID, *c.AgentID)
		switch {
		case errors.Is(err, storage.ErrNotFound) && r.Direction != storage.DirectionInbound:
			return Admission[C]{}, ErrUnknownAgent
		case errors.Is(err, storage.ErrNotFound):
			refusal = ErrNoAgent // deleted between lookups
		case err != nil:
			return Admission[C]{}, err
		default:
			if cfg, err = l.schema.Decode(a.Config); err != nil {
				return Admission[C]{}, err
			}
			setSnapshot(&c, l.schema.Snapshot(cfg))
		}
	}
	if refusal == nil {
		bal, err := l.st.Balances.Balance(ctx, c.OrgID)
		if err != nil {
			return Admission[C]{}, err
		}
		maxDur := MaxCallDuration(bal, l.product(c.Product))
		if bal <= 0 || maxDur == 0 {
			refusal = ErrInsufficientBalance
		}
		adm.MaxDuration = maxDur
	}
	if refusal != nil {
		refuse(&c, refusal)
	}
	c, err := l.st.Calls.CreateCall(ctx, c)
	if err != nil {
		return Admission[C]{}, err
	}
	adm.CallID, adm.OrgID, adm.Agent, adm.StartTime = c.ID, c.OrgID, cfg, c.StartTime
	if c.AgentID != nil {
		adm.AgentID = *c.AgentID
	}
	return adm, refusal
}

// refuse records refusal on c: failed at once, with no duration.
func refuse(c *storage.Call, refusal error) {
	now := time.Now()
	zero := int64(0)
	c.Status, c.EndTime, c.DurationSeconds = storage.CallFailed, &now, &zero
	c.EndReason, c.EndDetail = optStr(refusalReason(refusal)), refusal.Error()
}

func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrNumberInactive):
		return "number_inactive"
	case errors.Is(err, ErrNoAgent):
		return "no_agent"
	case errors.Is(err, ErrInsufficientBalance):
		return "insufficient_balance"
	}
	return "rejected"
}

// AdmitInline admits a web call that runs an inline configuration (a
// realtime session.update or POST /v1/realtime/sessions config) instead of
// a saved agent. A configuration error is an *api.Error (400) with a
// message per field; a zero balance is ErrInsufficientBalance, with the
// refused call recorded as failed.
func (l *Log[C]) AdmitInline(ctx context.Context, orgID int64, raw json.RawMessage, roomName string) (Admission[C], error) {
	cfg, f := l.schema.Inline(raw, "")
	if err := f.Err(); err != nil {
		return Admission[C]{}, err
	}
	return l.AdmitConfig(ctx, orgID, cfg, roomName)
}

// AdmitConfig is AdmitInline with a configuration already validated.
func (l *Log[C]) AdmitConfig(ctx context.Context, orgID int64, cfg C, roomName string) (Admission[C], error) {
	c := storage.Call{Direction: storage.DirectionWeb, OrgID: orgID, FromNumber: "internal:web", ToNumber: "agent:inline",
		Status: storage.CallInProgress, MediaRoomName: optStr(roomName)}
	setSnapshot(&c, l.schema.Snapshot(cfg))
	bal, err := l.st.Balances.Balance(ctx, orgID)
	if err != nil {
		return Admission[C]{}, err
	}
	maxDur := MaxCallDuration(bal, l.product(c.Product))
	var refusal error
	if bal <= 0 || maxDur == 0 {
		refusal = ErrInsufficientBalance
		refuse(&c, refusal)
	}
	c, err = l.st.Calls.CreateCall(ctx, c)
	if err != nil {
		return Admission[C]{}, err
	}
	return Admission[C]{CallID: c.ID, OrgID: orgID, Agent: cfg, StartTime: c.StartTime, MaxDuration: maxDur}, refusal
}

// Readmit rebuilds the admission of admitted call cl when its media
// connects later (a mic session): the agent's deployed configuration and
// what the balance pays for now. ErrUnknownAgent when the call has no
// agent or it was deleted.
func (l *Log[C]) Readmit(ctx context.Context, cl storage.Call) (Admission[C], error) {
	adm := Admission[C]{CallID: cl.ID, OrgID: cl.OrgID, StartTime: cl.StartTime}
	if cl.AgentID == nil {
		return Admission[C]{}, ErrUnknownAgent
	}
	adm.AgentID = *cl.AgentID
	a, err := l.st.Agents.Agent(ctx, cl.OrgID, adm.AgentID)
	if errors.Is(err, storage.ErrNotFound) {
		return Admission[C]{}, ErrUnknownAgent
	}
	if err != nil {
		return Admission[C]{}, err
	}
	if adm.Agent, err = l.schema.Decode(a.Config); err != nil {
		return Admission[C]{}, err
	}
	bal, err := l.st.Balances.Balance(ctx, cl.OrgID)
	if err != nil {
		return Admission[C]{}, err
	}
	adm.MaxDuration = MaxCallDuration(bal, l.product(cl.Product))
	return adm, nil
}

// setSnapshot records on c the configuration in effect at call time.
func setSnapshot(c *storage.Call, s Snapshot) {
	c.PromptSnapshot, c.Product, c.Voice = &s.Prompt, &s.Product, &s.Voice
	if s.Tools != nil {
		c.ToolSnapshot = s.Tools
	}
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
