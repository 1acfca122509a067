package calllog

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// PlaceSimulated records an outbound call of agentID from from to to that
// a simulation run's simulated caller answers (an inbound run: the agent
// calls the caller), marked is_simulation, and returns it for the
// simulator's node to dial. No trunk is involved: the simulator sets
// Trunk to its own user agent, which is reachable only from its node, so
// the dialer is not used. The guards are Place's for the agent and the
// balance (404, 402); from need not be one of the org's numbers (an agent
// target has none). The simulator reports the end through the call log
// like any outbound call; when it cannot dial, finish the call with
// FailSimulated.
func (l *Log[C]) PlaceSimulated(ctx context.Context, orgID, agentID int64, from, to string) (OutboundCall[C], error) {
	a, err := l.st.Agents.Agent(ctx, orgID, agentID)
	if errors.Is(err, storage.ErrNotFound) {
		return OutboundCall[C]{}, api.Err(http.StatusNotFound, "Agent not found.")
	}
	if err != nil {
		return OutboundCall[C]{}, err
	}
	bal, err := l.st.Balances.Balance(ctx, orgID)
	if err != nil {
		return OutboundCall[C]{}, err
	}
	cfg, err := l.schema.Decode(a.Config)
	if err != nil {
		return OutboundCall[C]{}, err
	}
	snap := l.schema.Snapshot(cfg)
	maxDur := MaxCallDuration(bal, l.product(&snap.Product))
	if maxDur == 0 {
		return OutboundCall[C]{}, api.Err(http.StatusPaymentRequired, "Insufficient balance: it does not cover the 0.25-minute minimum at this agent's price.")
	}
	call := storage.Call{OrgID: orgID, AgentID: &a.ID, Direction: storage.DirectionOutbound, FromNumber: from, ToNumber: to,
		Status: storage.CallInProgress, IsSimulation: true}
	setSnapshot(&call, snap)
	call, err = l.st.Calls.CreateCall(ctx, call)
	if err != nil {
		return OutboundCall[C]{}, err
	}
	return OutboundCall[C]{CallID: call.ID, OrgID: orgID, AgentID: a.ID, From: from, To: to, Agent: cfg, MaxDuration: maxDur}, nil
}

// FailSimulated ends a call PlaceSimulated recorded that was never
// dialed: failed, dial_failed, with detail.
func (l *Log[C]) FailSimulated(ctx context.Context, callID int64, detail string) error {
	return l.Finish(ctx, callID, CallEnd{Status: storage.CallFailed, Reason: "dial_failed", Detail: detail, At: time.Now()})
}
