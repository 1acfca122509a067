package calllog

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
)

// OutboundCall is a call the control plane has recorded and wants
// placed. The dialer owns it from here: it reports progress and the end
// through the CallLog (Append, Finish) under CallID.
type OutboundCall[C any] struct {
	CallID  int64
	OrgID   int64
	AgentID int64
	From    string
	To      string
	Agent   C
	Trunk   Trunk
	// MaxDuration is the longest the call may last: what the balance pays
	// for at the agent's product (MaxCallDuration). The telephony side
	// hangs up when it runs out; NoLimit for a free product.
	MaxDuration time.Duration
}

// Dialer places outbound calls. The telephony side implements it. Dial
// returns once the call is handed off (an INVITE is on its way), not when
// it is answered; an error means it could not be handed off at all.
type Dialer[C any] interface {
	Dial(ctx context.Context, call OutboundCall[C]) error
}

// PlaceRequest is the body of POST /v1/call.
type PlaceRequest struct {
	AgentID    *int64  `json:"agent_id"`
	FromNumber *string `json:"from_number"`
	ToNumber   *string `json:"to_number"`
}

// ServePlace answers POST /v1/call.
func (l *Log[C]) ServePlace(c fiber.Ctx, p *storage.Principal) error {
	var in PlaceRequest
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	call, err := l.Place(c.Context(), p.OrgID, in)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(calls.ViewOf(call))
}

// Place validates in, checks the guards of an outbound call (telephony,
// agent, number, balance), records the call and hands it to the dialer.
// POST /v1/call and the MCP place_call tool both use it.
func (l *Log[C]) Place(ctx context.Context, orgID int64, in PlaceRequest) (storage.Call, error) {
	f := api.Fields{}
	if in.AgentID == nil || *in.AgentID <= 0 {
		f.Add("agent_id", "This field is required.")
	}
	from, to := "", ""
	for _, e := range []struct {
		name string
		v    *string
		dst  *string
	}{{"from_number", in.FromNumber, &from}, {"to_number", in.ToNumber, &to}} {
		switch {
		case e.v == nil:
			f.Add(e.name, "This field is required.")
		case !numbers.ValidE164(strings.TrimSpace(*e.v)):
			f.Add(e.name, "Must be an E.164 number like +14155550100.")
		default:
			*e.dst = strings.TrimSpace(*e.v)
		}
	}
	if err := f.Err(); err != nil {
		return storage.Call{}, err
	}
	if l.dialer == nil {
		return storage.Call{}, api.Err(http.StatusServiceUnavailable, "Outbound calling is not available: this server runs without its telephony front door.")
	}
	a, err := l.st.Agents.Agent(ctx, orgID, *in.AgentID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Call{}, api.Err(http.StatusNotFound, "Agent not found.")
	}
	if err != nil {
		return storage.Call{}, err
	}
	n, err := l.st.Calls.PhoneNumberByE164(ctx, from)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && n.OrgID != orgID) {
		return storage.Call{}, api.FieldErr("from_number", "This number is not one of your organization's numbers.")
	}
	if err != nil {
		return storage.Call{}, err
	}
	if n.Source != storage.SourceVoIP || n.VoIPConnectionID == nil {
		return storage.Call{}, api.FieldErr("from_number", "Demo numbers are inbound only; place calls from a VoIP number.")
	}
	if n.Status != storage.NumberActive {
		return storage.Call{}, api.Err(http.StatusConflict, "The number "+from+" is "+n.Status+"; only active numbers place calls.")
	}
	bal, err := l.st.Balances.Balance(ctx, orgID)
	if err != nil {
		return storage.Call{}, err
	}
	if bal <= 0 {
		return storage.Call{}, api.Err(http.StatusPaymentRequired, "Insufficient balance: add credit to place calls.")
	}
	conn, err := l.st.Trunks.VoIPConnection(ctx, orgID, *n.VoIPConnectionID)
	if err != nil {
		return storage.Call{}, err
	}
	cfg, err := l.schema.Decode(a.Config)
	if err != nil {
		return storage.Call{}, err
	}
	snap := l.schema.Snapshot(cfg)
	maxDur := MaxCallDuration(bal, l.product(&snap.Product))
	if maxDur == 0 {
		return storage.Call{}, api.Err(http.StatusPaymentRequired, "Insufficient balance: it does not cover the 0.25-minute minimum at this agent's price.")
	}
	call := storage.Call{OrgID: orgID, AgentID: &a.ID, PhoneNumberID: &n.ID, Direction: storage.DirectionOutbound,
		FromNumber: from, ToNumber: to, Status: storage.CallInProgress}
	setSnapshot(&call, snap)
	call, err = l.st.Calls.CreateCall(ctx, call)
	if err != nil {
		return storage.Call{}, err
	}
	err = l.dialer.Dial(ctx, OutboundCall[C]{CallID: call.ID, OrgID: orgID, AgentID: a.ID, From: from, To: to, Agent: cfg,
		Trunk: trunkOf(conn), MaxDuration: maxDur})
	if err != nil {
		l.log.Warn("outbound call not placed", "call_id", call.ID, "err", err)
		ferr := l.Finish(context.WithoutCancel(ctx), call.ID, CallEnd{Status: storage.CallFailed, Reason: "dial_failed", Detail: err.Error(), At: time.Now()})
		if ferr != nil {
			return storage.Call{}, ferr
		}
		return storage.Call{}, api.Err(http.StatusBadGateway, "The call could not be placed: the trunk refused it or did not answer.")
	}
	call, err = l.st.Calls.Call(ctx, orgID, call.ID)
	return call, err
}
