package control

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage"
)

// Trunk is the SIP trunk an outbound call leaves through, with its clear
// credentials.
type Trunk struct {
	Host          string
	Port          int
	Transport     string
	Username      string
	Password      string
	OutboundProxy string
	Codecs        []string
}

// OutboundCall is a call the control plane has recorded and wants
// placed. The dialer owns it from here: it reports progress and the end
// through the CallLog (Append, Finish) under CallID.
type OutboundCall struct {
	CallID  int64
	OrgID   int64
	AgentID int64
	From    string
	To      string
	Agent   AgentConfig
	Trunk   Trunk
	// MaxDuration is the longest the call may last: what the balance pays
	// for at the agent's product (MaxCallDuration). The telephony side
	// hangs up when it runs out; NoLimit for a free product.
	MaxDuration time.Duration
}

// Dialer places outbound calls. The telephony side implements it. Dial
// returns once the call is handed off (an INVITE is on its way), not when
// it is answered; an error means it could not be handed off at all.
type Dialer interface {
	Dial(ctx context.Context, call OutboundCall) error
}

type outboundInput struct {
	AgentID    *int64  `json:"agent_id"`
	FromNumber *string `json:"from_number"`
	ToNumber   *string `json:"to_number"`
}

// placeCall answers POST /v1/call.
func (s *Server) placeCall(c fiber.Ctx, p *storage.Principal) error {
	var in outboundInput
	if err := decode(c, &in); err != nil {
		return err
	}
	call, err := s.dialOutbound(c.Context(), p.OrgID, in)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(calls.ViewOf(call))
}

// dialOutbound validates in, checks the guards of an outbound call
// (telephony, agent, number, balance), records the call and hands it to
// the dialer. POST /v1/call and the MCP place_call tool both use it.
func (s *Server) dialOutbound(ctx context.Context, orgID int64, in outboundInput) (storage.Call, error) {
	f := fields{}
	if in.AgentID == nil || *in.AgentID <= 0 {
		f.add("agent_id", "This field is required.")
	}
	from, to := "", ""
	for _, e := range []struct {
		name string
		v    *string
		dst  *string
	}{{"from_number", in.FromNumber, &from}, {"to_number", in.ToNumber, &to}} {
		switch {
		case e.v == nil:
			f.add(e.name, "This field is required.")
		case !validE164(strings.TrimSpace(*e.v)):
			f.add(e.name, "Must be an E.164 number like +14155550100.")
		default:
			*e.dst = strings.TrimSpace(*e.v)
		}
	}
	if err := f.err(); err != nil {
		return storage.Call{}, err
	}
	if s.res.dialer == nil {
		return storage.Call{}, apiErr(http.StatusServiceUnavailable, "Outbound calling is not available: this server runs without its telephony front door.")
	}
	st := s.store
	a, err := st.Agents.Agent(ctx, orgID, *in.AgentID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Call{}, apiErr(http.StatusNotFound, "Agent not found.")
	}
	if err != nil {
		return storage.Call{}, err
	}
	n, err := st.Calls.PhoneNumberByE164(ctx, from)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && n.OrgID != orgID) {
		return storage.Call{}, fieldErr("from_number", "This number is not one of your organization's numbers.")
	}
	if err != nil {
		return storage.Call{}, err
	}
	if n.Source != storage.SourceVoIP || n.VoIPConnectionID == nil {
		return storage.Call{}, fieldErr("from_number", "Demo numbers are inbound only; place calls from a VoIP number.")
	}
	if n.Status != storage.NumberActive {
		return storage.Call{}, apiErr(http.StatusConflict, "The number "+from+" is "+n.Status+"; only active numbers place calls.")
	}
	bal, err := st.Billing.Balance(ctx, orgID)
	if err != nil {
		return storage.Call{}, err
	}
	if bal <= 0 {
		return storage.Call{}, apiErr(http.StatusPaymentRequired, "Insufficient balance: add credit to place calls.")
	}
	conn, err := st.Numbers.VoIPConnection(ctx, orgID, *n.VoIPConnectionID)
	if err != nil {
		return storage.Call{}, err
	}
	cfg, err := s.res.decodeConfig(a.Config)
	if err != nil {
		return storage.Call{}, err
	}
	maxDur := MaxCallDuration(bal, s.res.product(&cfg.Product))
	if maxDur == 0 {
		return storage.Call{}, apiErr(http.StatusPaymentRequired, "Insufficient balance: it does not cover the 0.25-minute minimum at this agent's price.")
	}
	call := storage.Call{OrgID: orgID, AgentID: &a.ID, PhoneNumberID: &n.ID, Direction: storage.DirectionOutbound,
		FromNumber: from, ToNumber: to, Status: storage.CallInProgress}
	snapshotConfig(&call, cfg)
	call, err = st.Calls.CreateCall(ctx, call)
	if err != nil {
		return storage.Call{}, err
	}
	err = s.res.dialer.Dial(ctx, OutboundCall{CallID: call.ID, OrgID: orgID, AgentID: a.ID, From: from, To: to, Agent: cfg,
		Trunk: Trunk{Host: conn.Host, Port: conn.Port, Transport: conn.Transport, Username: conn.Username, Password: conn.Password,
			OutboundProxy: conn.OutboundProxy, Codecs: conn.Codecs}, MaxDuration: maxDur})
	if err != nil {
		if s.log != nil {
			s.log.Warn("outbound call not placed", "call_id", call.ID, "err", err)
		}
		ferr := s.CallLog().Finish(context.WithoutCancel(ctx), call.ID, CallEnd{Status: storage.CallFailed, Reason: "dial_failed", Detail: err.Error(), At: time.Now()})
		if ferr != nil {
			return storage.Call{}, ferr
		}
		return storage.Call{}, apiErr(http.StatusBadGateway, "The call could not be placed: the trunk refused it or did not answer.")
	}
	call, err = st.Calls.Call(ctx, orgID, call.ID)
	return call, err
}
