// Package simulations is the simulations API (spec 2.11, 3, 4.7): runs
// and batches of simulated calls against an agent (over the realtime
// WebSocket, mode bot) or a phone number (over SIP, mode sip), or with
// direction inbound the agent's outbound call to the simulated caller,
// each made for real by a leased background worker through a Simulator
// (call/sim behind cmd/voiced's adapter; on voiced control, a media
// node's through control/cluster), billed through the ledger and
// announced with test-call.completed.
package simulations

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/voices"
	"github.com/voiced/voiced/storage"
)

// Store is what the simulations need from storage (storage.SimulationStore).
type Store interface {
	CreateSimulationRuns(ctx context.Context, orgID int64, runs []storage.SimulationRun, batch *storage.SimulationBatch, limit int) ([]storage.SimulationRun, *storage.SimulationBatch, error)
	SimulationRuns(ctx context.Context, f storage.SimulationFilter) ([]storage.SimulationRun, error)
	SimulationRun(ctx context.Context, orgID, id int64) (storage.SimulationRun, error)
	FailStaleSimulationRuns(ctx context.Context, orgID int64, queuedBefore, leaseBefore time.Time, msg string) (int64, error)
	ClaimSimulationRun(ctx context.Context, owner string, lease time.Duration) (storage.SimulationRun, bool, error)
	ExtendSimulationLease(ctx context.Context, id int64, owner string, lease time.Duration) error
	FinishSimulationRun(ctx context.Context, id int64, owner string, e storage.SimulationEnd) (storage.SimulationRun, error)
	SimulationBatches(ctx context.Context, orgID int64, status string, limit, offset int) ([]storage.SimulationBatch, error)
	SimulationBatch(ctx context.Context, orgID, id int64) (storage.SimulationBatch, error)
	CallIDByExecution(ctx context.Context, orgID int64, name string) (int64, error)
	MarkCallSimulation(ctx context.Context, id int64) error
}

// Agents reads a target agent.
type Agents interface {
	Agent(ctx context.Context, orgID, id int64) (storage.Agent, error)
}

// Numbers reads a target phone number.
type Numbers interface {
	PhoneNumber(ctx context.Context, orgID, id int64) (storage.PhoneNumber, error)
}

// Balances reads an org's balance.
type Balances interface {
	Balance(ctx context.Context, orgID int64) (int64, error)
}

// Calls reads the call a run made, its turns and its latest grade.
type Calls interface {
	Call(ctx context.Context, orgID, id int64) (storage.Call, error)
	CallEvents(ctx context.Context, callIDs []int64, kinds ...string) ([]storage.CallEventRow, error)
	LatestCallGrade(ctx context.Context, orgID, id int64) (storage.CallGrade, error)
}

// Limits and defaults (spec 4.7, 8; the rest are decisions, see
// docs/decisions.md).
const (
	// MaxActive is the most runs an org may have queued or in progress.
	MaxActive = 10
	// MaxPrompt bounds scenario_prompt.
	MaxPrompt = 4000
	// ListDefault and ListMax bound the run and batch lists.
	ListDefault, ListMax = 100, 500
	// MaxBatch is the most runs one batch may ask for (MaxActive: a
	// bigger one could never be admitted).
	MaxBatch = MaxActive
	// DefaultStagger is the delay between a batch's runs.
	DefaultStagger = 5
	// MaxRunMinutes is the longest a simulated call lasts; the estimate
	// assumes it.
	MaxRunMinutes = 3
	// StaleQueued is how long past its start time a queued run may wait
	// for a worker before a list marks it failed; StaleLease how long
	// after its lease ran out (the worker renews it every 40 s) an
	// in-progress run is taken for lost.
	StaleQueued = 10 * time.Minute
	StaleLease  = time.Minute
)

// Multipliers are the simulator products' charge multipliers: the
// simulated caller's side of a run costs the multiplier times the call's
// own price.
var Multipliers = map[string]float64{"testing": 1, "spark": 1.5}

// Deps are the collaborators of the routes and the worker.
type Deps struct {
	Store    Store
	Agents   Agents
	Numbers  Numbers
	Balances Balances
	Calls    Calls
	// Price is the per-minute price of an agent's calls (its product).
	Price func(ctx context.Context, orgID, agentID int64) (int64, error)
	// Recordings signs the short-lived recording_url (calls.Config).
	Recordings calls.Config
	// Simulator makes the calls; nil: runs cannot start (502).
	Simulator Simulator
	// WebToken admits a web run's call (is_simulation) and issues the
	// realtime session token the simulated caller connects with
	// (control/realtime.Sessions.AgentToken).
	WebToken func(ctx context.Context, orgID, agentID int64) (token, url string, callID int64, err error)
	// PlaceSimulated records the agent's outbound call of an inbound run
	// (is_simulation, the agent's snapshot) and returns its id and the
	// call as the simulator's node dials it (control.OutboundCall as
	// JSON); FailCall ends such a call that was never dialed (nil
	// PlaceSimulated: inbound runs cannot start, 502).
	PlaceSimulated func(ctx context.Context, orgID, agentID int64, from, to string) (callID int64, outbound json.RawMessage, err error)
	FailCall       func(ctx context.Context, callID int64, detail string) error
	// Wake tells the worker a run is queued (nil: it polls).
	Wake func()
	// TestRunDone is told when a run of a test run has ended
	// (TestRunDeps.Verdicts finishes the test run after its last run).
	TestRunDone func(ctx context.Context, orgID, testRunID int64)
}

type handlers struct{ Deps }

// Routes are the routes of spec 4.7 and their deprecated aliases.
func Routes(d Deps) []api.Route {
	h := &handlers{d}
	var rs []api.Route
	for _, base := range []struct{ runs, batches, tag string }{
		{"/v1/simulations", "/v1/simulations/batches", ""},
		{"/v1/test-calls", "/v1/test-call-batches", " (deprecated alias of /v1/simulations)"},
	} {
		rs = append(rs,
			api.Route{Method: "GET", Path: base.runs, Summary: "List simulation runs, newest first (limit 100, max 500; offset, target_type, target_id, status); stale queued or in-progress runs are marked failed" + base.tag, Tag: "simulations", Auth: api.AuthOrg, ResSchema: "SimulationRun", ResList: true, Errors: []int{400}, Handler: h.list},
			api.Route{Method: "POST", Path: base.runs, Summary: "Start one simulation run; consent_to_charge must be true" + base.tag, Tag: "simulations", Auth: api.AuthOrg, ReqSchema: "SimulationInput", ResSchema: "SimulationRun", ResStatus: 201, Errors: []int{400, 402, 404, 429, 502}, Handler: h.create},
		)
		batchTag := strings.ReplaceAll(base.tag, "/v1/simulations", "/v1/simulations/batches")
		rs = append(rs,
			api.Route{Method: "GET", Path: base.batches, Summary: "List simulation batches, newest first (status, limit 100 max 500, offset)" + batchTag, Tag: "simulations", Auth: api.AuthOrg, ResSchema: "SimulationBatch", ResList: true, Errors: []int{400}, Handler: h.batches},
			api.Route{Method: "POST", Path: base.batches, Summary: "Start a batch of staggered runs against one target; answers at once, in_progress" + batchTag, Tag: "simulations", Auth: api.AuthOrg, ReqSchema: "SimulationBatchInput", ResSchema: "SimulationBatch", ResStatus: 201, Errors: []int{400, 402, 404, 429, 502}, Handler: h.createBatch},
			api.Route{Method: "GET", Path: base.batches + "/:batch_id", Summary: "A batch's status and run_ids" + batchTag, Tag: "simulations", Auth: api.AuthOrg, ResSchema: "SimulationBatch", Errors: []int{404}, Handler: h.batch},
		)
	}
	return rs
}

// input is a run request (and the common part of a batch request).
type input struct {
	TargetType       *string `json:"target_type"`
	TargetID         *int64  `json:"target_id"`
	Direction        *string `json:"direction"`
	TargetNumber     *string `json:"target_number"`
	ScenarioPrompt   *string `json:"scenario_prompt"`
	Language         *string `json:"language"`
	PrimaryLanguage  *string `json:"primary_language"`
	SimulatorProduct *string `json:"simulator_product"`
	ConsentToCharge  *bool   `json:"consent_to_charge"`
	// Batch only.
	Count           *int     `json:"count"`
	StaggerSeconds  *int     `json:"stagger_seconds"`
	ScenarioPrompts []string `json:"scenario_prompts"`
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// Languages the simulated caller speaks (espeak-ng voices, call/sim).
var simLanguages = map[string]bool{"en": true, "es": true, "fr": true}

// validate checks the fields every run request has and returns the run
// to create (target not yet resolved).
func validate(in input, f api.Fields) storage.SimulationRun {
	r := storage.SimulationRun{Direction: "outbound", SimulatorProduct: "testing"}
	switch {
	case in.TargetType == nil:
		f.Add("target_type", "This field is required.")
	case *in.TargetType != "agent" && *in.TargetType != "phone_number":
		f.Add("target_type", `Must be "agent" or "phone_number".`)
	default:
		r.TargetType = *in.TargetType
	}
	switch {
	case in.TargetID == nil:
		f.Add("target_id", "This field is required.")
	case *in.TargetID <= 0:
		f.Add("target_id", "Must be a positive integer.")
	default:
		id := *in.TargetID
		r.TargetID = &id
	}
	if in.Direction != nil {
		if *in.Direction != "outbound" && *in.Direction != "inbound" {
			f.Add("direction", `Must be "outbound" or "inbound".`)
		}
		r.Direction = *in.Direction
	}
	if in.TargetNumber != nil && *in.TargetNumber != "" {
		if !e164.MatchString(*in.TargetNumber) {
			f.Add("target_number", "Must be an E.164 number like +14155550100.")
		}
		r.TargetNumber = *in.TargetNumber
	}
	if in.ScenarioPrompt != nil {
		if n := len([]rune(*in.ScenarioPrompt)); n > MaxPrompt {
			f.Add("scenario_prompt", "Ensure this field has no more than 4000 characters.")
		}
		r.ScenarioPrompt = *in.ScenarioPrompt
	}
	lang, field := in.Language, "language"
	if lang == nil {
		lang, field = in.PrimaryLanguage, "primary_language"
	}
	if lang != nil && *lang != "" {
		tag, ok := voices.NormalizeLang(*lang)
		base, _, _ := strings.Cut(tag, "-")
		switch {
		case !ok:
			f.Add(field, "Must be an ISO 639 or BCP-47 language tag.")
		case !simLanguages[base]:
			f.Add(field, "The simulated caller does not speak "+tag+"; use en, es or fr.")
		default:
			r.Language = tag
		}
	}
	if in.SimulatorProduct != nil {
		if _, ok := Multipliers[*in.SimulatorProduct]; !ok {
			f.Add("simulator_product", `Must be "testing" or "spark".`)
		}
		r.SimulatorProduct = *in.SimulatorProduct
	}
	r.ChargeMultiplier = Multipliers[r.SimulatorProduct]
	switch {
	case in.ConsentToCharge == nil:
		f.Add("consent_to_charge", "This field is required.")
	case !*in.ConsentToCharge:
		f.Add("consent_to_charge", "Must be true: simulation runs are charged.")
	}
	return r
}

// resolve fills the run's target from the store (404 when it is not the
// org's), its mode and its cost estimate.
func (h *handlers) resolve(ctx context.Context, orgID int64, r *storage.SimulationRun) error {
	var agentID int64
	switch r.TargetType {
	case "agent":
		a, err := h.Agents.Agent(ctx, orgID, *r.TargetID)
		if err != nil {
			return targetErr(err)
		}
		r.Mode, r.TargetName, agentID = "bot", a.Name, a.ID
		name := a.Name
		r.AgentID, r.AgentName = &agentID, &name
	case "phone_number":
		n, err := h.Numbers.PhoneNumber(ctx, orgID, *r.TargetID)
		if err != nil {
			return targetErr(err)
		}
		r.Mode, r.TargetName = "sip", n.Number
		if n.InboundAgentID != nil {
			agentID = *n.InboundAgentID
			if a, err := h.Agents.Agent(ctx, orgID, agentID); err == nil {
				name := a.Name
				r.AgentID, r.AgentName = &agentID, &name
			}
		}
	}
	if h.Price != nil && agentID != 0 {
		cpm, err := h.Price(ctx, orgID, agentID)
		if err != nil {
			return err
		}
		// The agent's call plus the simulated caller's side, for the
		// longest a run lasts.
		est := int64(math.Ceil((1 + r.ChargeMultiplier) * float64(cpm) * MaxRunMinutes))
		r.EstimatedCostCents = &est
	}
	return nil
}

func targetErr(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return api.Err(http.StatusNotFound, "The target does not exist in this organization.")
	}
	return err
}

func requester(p *storage.Principal) *int64 {
	if p.KeyID != "" || p.UserID == 0 {
		return nil
	}
	id := p.UserID
	return &id
}

// admit checks the balance (402), creates the runs (429 over the limit)
// and, when no simulator can start them, marks them failed (502).
func (h *handlers) admit(c fiber.Ctx, p *storage.Principal, runs []storage.SimulationRun, batch *storage.SimulationBatch) ([]storage.SimulationRun, *storage.SimulationBatch, error) {
	ctx := c.Context()
	bal, err := h.Balances.Balance(ctx, p.OrgID)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, nil, err
	}
	if bal <= 0 {
		return nil, nil, api.Err(http.StatusPaymentRequired, "Insufficient balance: top up to run simulations.")
	}
	out, b, err := h.Store.CreateSimulationRuns(ctx, p.OrgID, runs, batch, MaxActive)
	if errors.Is(err, storage.ErrSimulationLimit) {
		return nil, nil, api.Err(http.StatusTooManyRequests, "More than 10 simulation runs would be queued or in progress in this organization; wait for some to finish.")
	}
	if err != nil {
		return nil, nil, err
	}
	if why := h.cannotStart(runs[0]); why != "" {
		for i, r := range out {
			f, err := h.Store.FinishSimulationRun(ctx, r.ID, "", storage.SimulationEnd{Status: storage.SimFailed, ErrorMessage: why, Event: completedEvent})
			if err != nil {
				return nil, nil, err
			}
			out[i] = f
		}
		if b != nil {
			for i := range b.RunStatuses {
				b.RunStatuses[i] = storage.SimFailed
			}
		}
		return out, b, &startErr{why}
	}
	if h.Wake != nil {
		h.Wake()
	}
	return out, b, nil
}

// startErr is the 502 of a run that could not start.
type startErr struct{ why string }

func (e *startErr) Error() string { return e.why }

// cannotStart says why r cannot start now ("" when it can).
func (h *handlers) cannotStart(r storage.SimulationRun) string {
	if r.Direction == "inbound" && h.PlaceSimulated == nil {
		return "Inbound simulations (the agent calls the simulated caller) are not supported by this deployment."
	}
	if r.AgentID == nil && (r.Mode == "bot" || r.Direction == "inbound") {
		return "The target has no agent."
	}
	if h.Simulator == nil {
		return "No simulated caller is available on this deployment."
	}
	if err := h.Simulator.Ready(channelOf(r)); err != nil {
		return "The simulated caller cannot start: " + err.Error()
	}
	return ""
}

// channelOf is the channel r's call goes over: telephony for a phone
// number, and for every inbound run (the agent places a phone call);
// the web for an agent's outbound run.
func channelOf(r storage.SimulationRun) string {
	if r.Mode == "sip" || r.Direction == "inbound" {
		return "telephony"
	}
	return "web"
}

func (h *handlers) create(c fiber.Ctx, p *storage.Principal) error {
	var in input
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	r := validate(in, f)
	if err := f.Err(); err != nil {
		return err
	}
	if err := h.resolve(c.Context(), p.OrgID, &r); err != nil {
		return err
	}
	r.RequestedByID = requester(p)
	out, _, err := h.admit(c, p, []storage.SimulationRun{r}, nil)
	var se *startErr
	if errors.As(err, &se) {
		return api.Err(http.StatusBadGateway, "The run could not start: "+se.why+" (run "+strconv.FormatInt(out[0].ID, 10)+" is marked failed).")
	}
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(h.view(c.Context(), out[0]))
}

func (h *handlers) createBatch(c fiber.Ctx, p *storage.Principal) error {
	var in input
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	r := validate(in, f)
	count := 1
	if len(in.ScenarioPrompts) > 0 {
		count = len(in.ScenarioPrompts)
		if in.ScenarioPrompt != nil {
			f.Add("scenario_prompts", "Give scenario_prompt or scenario_prompts, not both.")
		}
		for _, s := range in.ScenarioPrompts {
			if len([]rune(s)) > MaxPrompt {
				f.Add("scenario_prompts", "Ensure each prompt has no more than 4000 characters.")
				break
			}
		}
	}
	if in.Count != nil {
		if len(in.ScenarioPrompts) > 0 && *in.Count != len(in.ScenarioPrompts) {
			f.Add("count", "Must equal the number of scenario_prompts, or be left out.")
		}
		count = *in.Count
	}
	if count < 1 || count > MaxBatch {
		f.Add("count", "Must be an integer from 1 to 10.")
	}
	stagger := DefaultStagger
	if in.StaggerSeconds != nil {
		stagger = *in.StaggerSeconds
		if stagger < 0 || stagger > 60 {
			f.Add("stagger_seconds", "Must be an integer from 0 to 60.")
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	if err := h.resolve(c.Context(), p.OrgID, &r); err != nil {
		return err
	}
	r.RequestedByID = requester(p)
	now := time.Now()
	runs := make([]storage.SimulationRun, count)
	for i := range runs {
		runs[i] = r
		if len(in.ScenarioPrompts) > 0 {
			runs[i].ScenarioPrompt = in.ScenarioPrompts[i]
		}
		runs[i].NotBefore = now.Add(time.Duration(i*stagger) * time.Second)
	}
	batch := &storage.SimulationBatch{TargetType: r.TargetType, TargetID: *r.TargetID, Count: int64(count), StaggerSeconds: int64(stagger),
		RequestedByID: r.RequestedByID}
	_, b, err := h.admit(c, p, runs, batch)
	var se *startErr
	if errors.As(err, &se) {
		return api.Err(http.StatusBadGateway, "The batch could not start: "+se.why+" (batch "+strconv.FormatInt(b.ID, 10)+" and its runs are marked failed).")
	}
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(batchView(*b))
}

// staleMessage is the error_message of a run a list found lost.
const staleMessage = "The run's completion signal was lost: no worker finished it in time."

func (h *handlers) list(c fiber.Ctx, p *storage.Principal) error {
	limit, err := api.QueryLimit(c, ListDefault, ListMax)
	if err != nil {
		return err
	}
	fl := storage.SimulationFilter{OrgID: p.OrgID, Limit: limit}
	if fl.Offset, err = api.QueryOffset(c); err != nil {
		return err
	}
	if t := c.Query("target_type"); t != "" {
		if t != "agent" && t != "phone_number" {
			return api.FieldErr("target_type", `Must be "agent" or "phone_number".`)
		}
		fl.TargetType = t
	}
	if t := c.Query("target_id"); t != "" {
		id, err := strconv.ParseInt(t, 10, 64)
		if err != nil || id <= 0 {
			return api.FieldErr("target_id", "Must be a positive integer.")
		}
		fl.TargetID = &id
	}
	if s := c.Query("status"); s != "" {
		switch s {
		case storage.SimQueued, storage.SimInProgress, storage.SimCompleted, storage.SimFailed:
		default:
			return api.FieldErr("status", "Must be one of queued, in_progress, completed, failed.")
		}
		fl.Status = s
	}
	now := time.Now()
	if _, err := h.Store.FailStaleSimulationRuns(c.Context(), p.OrgID, now.Add(-StaleQueued), now.Add(-StaleLease), staleMessage); err != nil {
		return err
	}
	runs, err := h.Store.SimulationRuns(c.Context(), fl)
	if err != nil {
		return err
	}
	out := make([]any, len(runs))
	for i, r := range runs {
		out[i] = h.view(c.Context(), r)
	}
	return c.JSON(out)
}

func (h *handlers) batches(c fiber.Ctx, p *storage.Principal) error {
	limit, err := api.QueryLimit(c, ListDefault, ListMax)
	if err != nil {
		return err
	}
	off, err := api.QueryOffset(c)
	if err != nil {
		return err
	}
	st := c.Query("status")
	switch st {
	case "", storage.SimInProgress, storage.SimCompleted, storage.SimFailed:
	default:
		return api.FieldErr("status", "Must be one of in_progress, completed, failed.")
	}
	now := time.Now()
	if _, err := h.Store.FailStaleSimulationRuns(c.Context(), p.OrgID, now.Add(-StaleQueued), now.Add(-StaleLease), staleMessage); err != nil {
		return err
	}
	bs, err := h.Store.SimulationBatches(c.Context(), p.OrgID, st, limit, off)
	if err != nil {
		return err
	}
	out := make([]any, len(bs))
	for i, b := range bs {
		out[i] = batchView(b)
	}
	return c.JSON(out)
}

func (h *handlers) batch(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "batch_id")
	if err != nil {
		return err
	}
	b, err := h.Store.SimulationBatch(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(batchView(b))
}

// batchView is the batch object (its shape is not in the spec: see
// docs/decisions.md).
func batchView(b storage.SimulationBatch) map[string]any {
	return map[string]any{"id": b.ID, "status": storage.BatchStatus(b.RunStatuses), "target_type": b.TargetType, "target_id": b.TargetID,
		"count": b.Count, "stagger_seconds": b.StaggerSeconds, "run_ids": api.NonNil(b.RunIDs), "requested_by_id": b.RequestedByID,
		"created_at": api.TS(b.CreatedAt), "updated_at": api.TS(b.UpdatedAt)}
}

// view is the run object of spec 2.11. recording_url is a fresh signed
// link to the call's recording; grade the call's latest grade.
func (h *handlers) view(ctx context.Context, r storage.SimulationRun) map[string]any {
	v := map[string]any{"id": r.ID, "target_type": r.TargetType, "target_id": r.TargetID, "target_name": r.TargetName, "agent_name": r.AgentName,
		"direction": r.Direction, "mode": r.Mode, "target_number": r.TargetNumber, "scenario_prompt": r.ScenarioPrompt, "status": r.Status,
		"charge_multiplier": r.ChargeMultiplier, "estimated_cost_cents": r.EstimatedCostCents, "call_id": r.CallID, "error_message": r.ErrorMessage,
		"metadata": json.RawMessage(r.Metadata), "requested_by_id": r.RequestedByID, "started_at": api.TSPtr(r.StartedAt),
		"completed_at": api.TSPtr(r.CompletedAt), "created_at": api.TS(r.CreatedAt), "updated_at": api.TS(r.UpdatedAt),
		"duration_seconds": r.DurationSeconds, "recording_url": nil, "transcript": json.RawMessage(r.Transcript), "grade": nil,
		"batch_id": r.BatchID, "language": r.Language, "simulator_product": r.SimulatorProduct, "charged_cents": r.ChargedCents}
	if r.CallID != nil && h.Calls != nil {
		if cl, err := h.Calls.Call(ctx, r.OrgID, *r.CallID); err == nil && cl.RecordingKey != "" && h.Recordings.SignKey != nil {
			v["recording_url"] = calls.RecordingURL(h.Recordings, cl.ID)
		}
		if g, err := h.Calls.LatestCallGrade(ctx, r.OrgID, *r.CallID); err == nil {
			v["grade"] = calls.GradeViewOf(g)
		}
	}
	return v
}

// completedEvent is test-call.completed's data: the run, without the
// transcript (fetch the run for it).
func completedEvent(r storage.SimulationRun) ([]byte, error) {
	return json.Marshal(map[string]any{"simulation_id": r.ID, "batch_id": r.BatchID, "status": r.Status, "target_type": r.TargetType,
		"target_id": r.TargetID, "agent_id": r.AgentID, "mode": r.Mode, "direction": r.Direction, "call_id": r.CallID,
		"duration_seconds": r.DurationSeconds, "error_message": r.ErrorMessage, "charged_cents": r.ChargedCents,
		"completed_at": api.TSPtr(r.CompletedAt)})
}
