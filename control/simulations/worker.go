package simulations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/jobs"
	"github.com/voiced/voiced/storage"
)

// Simulator makes a run's call for real: the simulated caller on the
// channel (cmd/voiced adapts call/sim to it).
type Simulator interface {
	// Ready says whether a call on channel ("web" or "telephony") can
	// start now (nil) or why not.
	Ready(channel string) error
	// Simulate makes the call and returns when it has ended. An error
	// means it never started.
	Simulate(ctx context.Context, c Call) (Outcome, error)
}

// Call is what the simulator is asked to do.
type Call struct {
	RunID, OrgID int64
	// Channel is "web" (AgentID over the realtime WebSocket) or
	// "telephony" (Number over SIP).
	Channel string
	AgentID int64
	// Token and URL are a web call's realtime session token and
	// endpoint (the call is admitted already); Number is the dialed
	// number of a telephony call.
	Token, URL string
	Number     string
	Prompt     string
	Language   string
	// Caller is the simulated caller's settings (a test run's scenario
	// and matrix combination; zero for a plain run: the defaults).
	Caller Caller
	// Direction is the run's: "outbound" (the simulated caller rings
	// the target) or "inbound" (the agent calls the simulated caller,
	// always over telephony). An inbound call is recorded already:
	// Outbound is the agent's outbound call as a node dials it
	// (control.OutboundCall as JSON, no trunk), Number the number it
	// calls. The simulator answers Number on its own user agent, sets
	// the call's trunk to that user agent and dials it from the node
	// whose SIP stack it sits next to.
	Direction string          `json:"direction,omitempty"`
	Outbound  json.RawMessage `json:"outbound,omitempty"`
}

// Outcome is a simulated call that happened.
type Outcome struct {
	// CallID is the node's call id when the channel gave it (web);
	// Execution is the call's worker execution name otherwise
	// ("sip:<Call-ID>").
	CallID    int64
	Execution string
	// End is how the caller saw the call end ("caller_hangup",
	// "agent_hangup", "not_answered: ..."); Answered false fails the run.
	End      string
	Answered bool
	// Metadata is the simulated caller's diagnostics (voice and its
	// mapping, DTMF, lines), kept in the run's metadata.
	Metadata map[string]any
}

// Worker runs queued simulation runs under a lease (control/jobs).
type Worker struct {
	Deps
	Log   *slog.Logger
	Owner string
	// Poll and Lease default to 1 s and 2 min.
	Poll, Lease time.Duration
	wake        chan struct{}
	calls       sync.WaitGroup
}

// NewWorker returns the worker of d.
func NewWorker(d Deps, log *slog.Logger) *Worker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{Deps: d, Log: log, Owner: "sim-" + storage.NewUUID(), Poll: time.Second, Lease: 2 * time.Minute, wake: make(chan struct{}, 1)}
}

// Wake makes the worker look for due runs now.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run works the queue until ctx ends; each claimed run's call runs in
// its own goroutine, so staggered runs of a batch overlap. When ctx ends
// the calls in progress hang up, and Run returns once their runs are
// finished (failed, with the reason).
func (w *Worker) Run(ctx context.Context) error {
	defer w.calls.Wait()
	return jobs.Run(ctx, w.Poll, w.wake, func(ctx context.Context) (bool, error) {
		r, ok, err := w.Store.ClaimSimulationRun(ctx, w.Owner, w.Lease)
		if err != nil || !ok {
			return false, err
		}
		w.calls.Go(func() { w.execute(ctx, r) })
		return true, nil
	}, func(err error) { w.Log.Warn("simulations", "err", err.Error()) })
}

// execute makes run r's call, waits for the node to record its end, and
// finishes the run from the call: call id, transcript, duration, charge.
func (w *Worker) execute(ctx context.Context, r storage.SimulationRun) {
	jctx, stop := jobs.Hold(ctx, w.Lease, func(ctx context.Context) error {
		return w.Store.ExtendSimulationLease(ctx, r.ID, w.Owner, w.Lease)
	})
	defer stop()
	end := w.simulate(jctx, r)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	end.Event = completedEvent
	if _, err := w.Store.FinishSimulationRun(fctx, r.ID, w.Owner, end); err != nil && !errors.Is(err, storage.ErrConflict) {
		w.Log.Warn("simulation finish", "run", r.ID, "err", err.Error())
	}
	// The worker's context: a shutdown does not wait for pending grades;
	// a test run left unfinished then is settled by its next read.
	if r.TestRunID != nil && w.TestRunDone != nil && ctx.Err() == nil {
		w.TestRunDone(ctx, r.OrgID, *r.TestRunID)
	}
}

func (w *Worker) simulate(ctx context.Context, r storage.SimulationRun) storage.SimulationEnd {
	fail := func(msg string, meta map[string]any) storage.SimulationEnd {
		m, _ := json.Marshal(meta)
		return storage.SimulationEnd{Status: storage.SimFailed, ErrorMessage: msg, Metadata: m}
	}
	if w.Simulator == nil {
		return fail("No simulated caller is available on this deployment.", nil)
	}
	c := Call{RunID: r.ID, OrgID: r.OrgID, Channel: channelOf(r), Prompt: r.ScenarioPrompt, Language: r.Language, Direction: r.Direction}
	if len(r.Caller) > 0 {
		if err := json.Unmarshal(r.Caller, &c.Caller); err != nil {
			return fail("The run's caller settings are unreadable: "+err.Error(), nil)
		}
	}
	if r.AgentID != nil {
		c.AgentID = *r.AgentID
	}
	if r.Mode == "sip" {
		c.Number = r.TargetNumber
		if c.Number == "" {
			c.Number = r.TargetName
		}
	}
	var webCall int64
	if r.Direction == "inbound" {
		if r.AgentID == nil {
			return fail("The target has no agent to place the call.", nil)
		}
		if w.PlaceSimulated == nil {
			return fail("Inbound simulations (the agent calls the simulated caller) are not supported by this deployment.", nil)
		}
		from, to := inboundNumbers(r)
		var err error
		if webCall, c.Outbound, err = w.PlaceSimulated(ctx, r.OrgID, c.AgentID, from, to); err != nil {
			return fail("The agent's call could not be placed: "+err.Error(), nil)
		}
		c.Number = to
	}
	if c.Channel == "web" {
		if w.WebToken == nil {
			return fail("Realtime sessions are not available to the simulated caller.", nil)
		}
		var err error
		if c.Token, c.URL, webCall, err = w.WebToken(ctx, r.OrgID, c.AgentID); err != nil {
			return fail("The simulated call could not start: "+err.Error(), nil)
		}
	}
	out, err := w.Simulator.Simulate(ctx, c)
	if err != nil {
		if c.Outbound != nil && w.FailCall != nil {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if ferr := w.FailCall(fctx, webCall, err.Error()); ferr != nil {
				w.Log.Warn("simulation: call not ended", "call_id", webCall, "err", ferr.Error())
			}
			cancel()
		}
		e := fail("The simulated call could not start: "+err.Error(), nil)
		if webCall != 0 {
			e.CallID = &webCall
		}
		return e
	}
	if out.CallID == 0 {
		out.CallID = webCall
	}
	meta := out.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	meta["channel"], meta["caller_end"], meta["direction"] = c.Channel, out.End, c.Direction
	callID := out.CallID
	if callID == 0 && out.Execution != "" {
		callID, _ = w.Store.CallIDByExecution(ctx, r.OrgID, out.Execution)
	}
	if callID == 0 {
		return fail("The simulated call was not answered: "+out.End, meta)
	}
	if c.Channel == "telephony" && c.Outbound == nil {
		if err := w.Store.MarkCallSimulation(ctx, callID); err != nil {
			w.Log.Warn("simulation: call not marked", "call_id", callID, "err", err.Error())
		}
	}
	// The node records the call's end as it hangs up: wait for it.
	var cl storage.Call
	deadline := time.Now().Add(15 * time.Second)
	for {
		cl, err = w.Calls.Call(ctx, r.OrgID, callID)
		// Billing follows the end in the same Finish: wait for it a
		// little, the charge is a multiple of it.
		if err == nil && cl.Status != storage.CallInProgress && cl.EndTime != nil && (cl.BilledAt != nil || time.Since(*cl.EndTime) > 3*time.Second) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			e := fail("The call's end was not recorded in time.", meta)
			e.CallID = &callID
			return e
		}
		time.Sleep(100 * time.Millisecond)
	}
	e := storage.SimulationEnd{Status: storage.SimCompleted, CallID: &callID, DurationSeconds: cl.DurationSeconds}
	if !out.Answered || cl.Status == storage.CallFailed {
		e.Status, e.ErrorMessage = storage.SimFailed, "The call failed: "+out.End
	}
	e.Transcript = w.transcript(ctx, callID)
	if cl.BillingTotalCents != nil {
		e.ChargeCents = int64(math.Ceil(r.ChargeMultiplier * float64(*cl.BillingTotalCents)))
	}
	e.Metadata, _ = json.Marshal(meta)
	return e
}

// Numbers of inbound runs (the agent calls the simulated caller).
const (
	// SimulationLine is the caller ID of an agent target's calls (an
	// agent has no number of its own).
	SimulationLine = "+15550000001"
	// callerPrefix makes the number the agent calls when the run names
	// none: unique per run (its id), so concurrent runs answering on
	// one user agent are never crossed.
	callerPrefix = "+1555"
)

// inboundNumbers are the caller ID and the dialed number of an inbound
// run's call: the target number (or the line, for an agent) calls
// target_number, else a number of the run's own.
func inboundNumbers(r storage.SimulationRun) (from, to string) {
	from = SimulationLine
	if r.Mode == "sip" && r.TargetName != "" {
		from = r.TargetName
	}
	if to = r.TargetNumber; to == "" {
		to = fmt.Sprintf("%s%07d", callerPrefix, r.ID%10_000_000)
	}
	return from, to
}

// transcript is the call's turns as {role, content, timestamp}.
func (w *Worker) transcript(ctx context.Context, callID int64) json.RawMessage {
	evs, err := w.Calls.CallEvents(ctx, []int64{callID}, "turn")
	if err != nil {
		return nil
	}
	type item struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		Timestamp string `json:"timestamp"`
	}
	out := []item{}
	for _, ev := range evs {
		var d calls.EventData
		if json.Unmarshal(ev.Data, &d) != nil {
			continue
		}
		out = append(out, item{Role: d.Role, Content: d.Text, Timestamp: api.TS(ev.At)})
	}
	b, _ := json.Marshal(out)
	return b
}
