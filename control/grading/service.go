package grading

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/jobs"
	"github.com/voiced/voiced/storage"
)

// Calls reads calls and their events (storage.CallStore).
type Calls interface {
	Call(ctx context.Context, orgID, id int64) (storage.Call, error)
	CallByID(ctx context.Context, id int64) (storage.Call, error)
	CallEvents(ctx context.Context, callIDs []int64, kinds ...string) ([]storage.CallEventRow, error)
}

// Queue is the durable grading queue and the grade record
// (storage.GradingStore).
type Queue interface {
	ClaimGradeJob(ctx context.Context, owner string, lease time.Duration) (storage.GradeJob, bool, error)
	ExtendGradeLease(ctx context.Context, job storage.GradeJob, lease time.Duration) error
	EndGradeJob(ctx context.Context, job storage.GradeJob, msg string, retryAt *time.Time) error
	RecordGrade(ctx context.Context, job *storage.GradeJob, g storage.CallGrade, issues []storage.IssueReport) (storage.CallGrade, []storage.IssueReport, error)
}

// AgentPolicy says whether an agent grades its calls and gives the
// prompt the judge grades against (the control plane decodes the agent's
// configuration). ok false: the agent is gone.
type AgentPolicy func(ctx context.Context, orgID, agentID int64) (enabled bool, prompt string, ok bool, err error)

// Config configures grading.
type Config struct {
	// Model reaches an OpenAI-compatible chat model for the judge; an
	// empty BaseURL means no judge (measured facts only).
	Model llm.OpenAIConfig
	// Poll is how often the worker looks for due gradings (default 2 s),
	// Lease how long a claim lasts without renewal (default 2 min).
	Poll, Lease time.Duration
	// MaxAttempts bounds the worker's tries per call (default 4); Backoff
	// is the first retry delay, doubled each time (default 30 s).
	MaxAttempts int
	Backoff     time.Duration
	// NoWorker leaves the worker off (tests that grade by hand); calls
	// stay queued for a worker elsewhere.
	NoWorker bool
}

// RequestTimeout bounds the judge behind POST /v1/calls/{id}/grade.
const RequestTimeout = 25 * time.Second

// Service grades calls: the route and the worker.
type Service struct {
	cfg    Config
	log    *slog.Logger
	calls  Calls
	queue  Queue
	policy AgentPolicy
	grader *Grader
	owner  string
	wake   chan struct{}
}

// New returns a Service; Run starts its worker.
func New(cfg Config, log *slog.Logger, cs Calls, q Queue, policy AgentPolicy) (*Service, error) {
	if cfg.Poll == 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Lease == 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 4
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 30 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Grader{}
	if cfg.Model.BaseURL != "" {
		m, err := llm.NewOpenAI(cfg.Model)
		if err != nil {
			return nil, err
		}
		g.Model, g.ModelName = m, m.Model()
	}
	return &Service{cfg: cfg, log: log, calls: cs, queue: q, policy: policy, grader: g, owner: "grade-" + storage.NewUUID(),
		wake: make(chan struct{}, 1)}, nil
}

// Routes is POST /v1/calls/{call_id}/grade (GET is control/calls').
func (s *Service) Routes() []api.Route {
	return []api.Route{{Method: "POST", Path: "/v1/calls/:call_id/grade", Summary: "Grade or re-grade a finished call now", Tag: "calls",
		Auth: api.AuthOrg, ResSchema: "CallGrade", Errors: []int{404, 409}, Handler: s.grade}}
}

// grade grades a finished call synchronously: 409 while it is in
// progress. A judge failure is recorded as a failed grade (200) with its
// reason; the client may POST again.
func (s *Service) grade(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "call_id")
	if err != nil {
		return err
	}
	cl, err := s.calls.Call(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	if cl.Status == storage.CallInProgress || cl.EndTime == nil {
		return api.Err(http.StatusConflict, "The call is still in progress; grade it once it has ended.")
	}
	// The server writes a response within 30 s: the judge gets 25.
	ctx, cancel := context.WithTimeout(c.Context(), RequestTimeout)
	defer cancel()
	g, err := s.gradeCall(ctx, cl, nil, true)
	if err != nil {
		return err
	}
	return c.JSON(calls.GradeViewOf(g))
}

// gradeCall grades cl and records the result. With final false a judge
// failure is returned for a retry instead of recorded.
func (s *Service) gradeCall(ctx context.Context, cl storage.Call, job *storage.GradeJob, final bool) (storage.CallGrade, error) {
	prompt := ""
	if cl.PromptSnapshot != nil {
		prompt = *cl.PromptSnapshot
	}
	events, err := s.calls.CallEvents(ctx, []int64{cl.ID}, "turn", "tool_call", "tool_result")
	if err != nil {
		return storage.CallGrade{}, err
	}
	res, err := s.grader.Grade(ctx, cl, prompt, events)
	switch {
	case err == nil:
	case errors.Is(err, ErrJudge) && final && context.Cause(ctx) != context.Canceled:
		// A judge that failed, or ran out of time, is recorded; a client
		// that went away (canceled) records nothing.
		res = Result{Grade: s.grader.Failed(cl, err)}
	default:
		return storage.CallGrade{}, err
	}
	g, _, err := s.queue.RecordGrade(ctx, job, res.Grade, res.Issues)
	return g, err
}

// Wake makes the worker look for work now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run grades queued calls until ctx ends (at once with NoWorker).
func (s *Service) Run(ctx context.Context) error {
	if s.cfg.NoWorker {
		return nil
	}
	return jobs.Run(ctx, s.cfg.Poll, s.wake, s.RunOnce, func(err error) { s.log.Warn("grading", "err", err.Error()) })
}

// RunOnce claims and grades one due call; did is false when none was due.
func (s *Service) RunOnce(ctx context.Context) (did bool, err error) {
	job, ok, err := s.queue.ClaimGradeJob(ctx, s.owner, s.cfg.Lease)
	if err != nil || !ok {
		return false, err
	}
	jctx, stop := jobs.Hold(ctx, s.cfg.Lease, func(ctx context.Context) error { return s.queue.ExtendGradeLease(ctx, job, s.cfg.Lease) })
	defer stop()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	cl, err := s.calls.CallByID(jctx, job.CallID)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return true, s.end(rctx, job, "call deleted", nil)
		}
		return true, s.retry(rctx, job, err)
	}
	if cl.AgentID == nil {
		return true, s.end(rctx, job, "skipped: no agent", nil)
	}
	on, _, ok, err := s.policy(jctx, cl.OrgID, *cl.AgentID)
	if err != nil {
		return true, s.retry(rctx, job, err)
	}
	if !ok || !on {
		return true, s.end(rctx, job, "skipped: grading is off for the agent", nil)
	}
	final := job.Attempts >= int64(s.cfg.MaxAttempts)
	_, err = s.gradeCall(jctx, cl, &job, final)
	if err == nil || errors.Is(err, storage.ErrConflict) {
		return true, nil
	}
	if jctx.Err() != nil {
		at := time.Now()
		return true, s.end(rctx, job, "", &at)
	}
	return true, s.retry(rctx, job, err)
}

func (s *Service) retry(ctx context.Context, job storage.GradeJob, cause error) error {
	if job.Attempts >= int64(s.cfg.MaxAttempts) {
		s.log.Warn("grading gave up", "call_id", job.CallID, "err", cause.Error())
		return s.end(ctx, job, "gave up: "+cause.Error(), nil)
	}
	d := s.cfg.Backoff << (job.Attempts - 1)
	at := time.Now().Add(d)
	s.log.Info("grading will retry", "call_id", job.CallID, "err", cause.Error(), "in", d.String())
	return s.end(ctx, job, cause.Error(), &at)
}

func (s *Service) end(ctx context.Context, job storage.GradeJob, msg string, retryAt *time.Time) error {
	err := s.queue.EndGradeJob(ctx, job, msg, retryAt)
	if errors.Is(err, storage.ErrConflict) {
		return nil
	}
	return err
}
