package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/grading"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/control/monitoring"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/control/scenarios"
	"github.com/voiced/voiced/control/simulations"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// Config holds the control plane's settings. Zero values mean defaults.
type Config struct {
	// PublicURL is the externally visible base URL (for links in
	// responses such as invite URLs). Default http://127.0.0.1:8080.
	PublicURL string
	// BodyLimit caps request bodies in bytes. Default 1 MiB.
	BodyLimit int
	// AuthCacheTTL bounds how long a GET may be served on a cached
	// credential after it was revoked on another replica. Default 2 s.
	AuthCacheTTL time.Duration
	// KeyTouchInterval is how often last_used_at is flushed. Default 10 s.
	KeyTouchInterval time.Duration
	// InviteTTL is how long an invite stays valid. Default 7 days.
	InviteTTL time.Duration
	// AccessLog turns on one log line per request.
	AccessLog bool
	// Version is reported by healthz.
	Version string
	// Resources configures agents, numbers and calls (resources.go).
	Resources ResourcesConfig
	// Payments configures the payment provider (Stripe or stripe-mock);
	// an empty APIKey means none: top-ups answer 503.
	Payments payment.Config
	// Webhooks configures the first attempt the test endpoint makes
	// itself (AllowLoopback, Timeout); the delivery worker runs apart.
	Webhooks webhook.Config
	// MonitoringToken is the shared token of the monitoring receivers
	// (?token=); empty turns them off (404). See control/monitoring.
	MonitoringToken string
	// Embed configures the optional embeddings provider of knowledge
	// search; an empty BaseURL means BM25 alone.
	Embed knowledge.EmbedConfig
	// DriveBaseURL is the Google Drive API root of knowledge import-drive;
	// empty means Google's.
	DriveBaseURL string
	// Model is the control plane's chat model: the call grader's judge
	// and the writer of test scenarios (generate, refresh,
	// promote-to-scenario). An empty BaseURL means none: grades hold
	// measured facts only and the scenario-writing routes answer 503.
	Model llm.OpenAIConfig
	// Grading configures the grading worker (its Model is Config.Model).
	Grading grading.Config
	// NoSimulationWorker leaves the simulation worker and the suite
	// scheduler off (API tests): runs stay queued for a worker
	// elsewhere.
	NoSimulationWorker bool
	// Suites configures the suite scheduler (simulations.Scheduler).
	Suites SuiteScheduleConfig
}

// SuiteScheduleConfig configures the suite scheduler; zero values mean
// defaults.
type SuiteScheduleConfig struct {
	// Now is the schedule's clock (time.Now); tests accelerate it.
	Now func() time.Time
	// Poll is how often it looks for due suites (15 s).
	Poll time.Duration
}

func (c Config) withDefaults() Config {
	if c.PublicURL == "" {
		c.PublicURL = "http://127.0.0.1:8080"
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.BodyLimit == 0 {
		c.BodyLimit = 1 << 20
	}
	if c.AuthCacheTTL == 0 {
		c.AuthCacheTTL = 2 * time.Second
	}
	if c.KeyTouchInterval == 0 {
		c.KeyTouchInterval = 10 * time.Second
	}
	if c.InviteTTL == 0 {
		c.InviteTTL = 7 * 24 * time.Hour
	}
	return c
}

// Limiter counts actions against a rate (coord.Limiter).
type Limiter interface {
	Allow(ctx context.Context, key string, r coord.Rate) (coord.Decision, error)
}

// Server is the control plane's HTTP server.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   *storage.Store
	limiter Limiter
	app     *fiber.App
	auth    *authenticator
	routes  []route
	metrics *metrics
	reqSeq  atomic.Uint64
	started time.Time
	res     *resources
	calls   *CallLog
	browser *browser.Calls[AgentConfig]
	numbers *numbers.Service
	monitor *monitoring.Monitor
	// providers counts the AI and payment providers' recent outcomes for
	// the status heartbeat (ProviderErrors).
	providers *monitoring.Window
	// knowledge serves /v1/knowledge; its ingestion worker runs from New
	// until Close or Shutdown (stopIngest waits for it).
	knowledge  *knowledge.Service
	grading    *grading.Service
	stopIngest func()
	// rt serves realtime sessions (control/realtime).
	rt *Realtime
	// model writes test scenarios; nil without Config.Model.
	model scenarios.Model
	// sims runs simulation runs' calls (control/simulations).
	sims *simulations.Worker
	// suites starts scheduled suites (control/simulations).
	suites *simulations.Scheduler
}

// New builds the server and its routes. Call Close to stop its background
// work (the last-used flusher). Options wire optional collaborators such
// as the telephony side (resources.go).
func New(cfg Config, log *slog.Logger, store *storage.Store, limiter Limiter, opts ...Option) (*Server, error) {
	if store == nil || limiter == nil {
		return nil, errors.New("control: store and limiter are required")
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, log: log, store: store, limiter: limiter, started: time.Now()}
	s.metrics = newMetrics()
	s.auth = newAuthenticator(store.Keys, store.Keys, store.Orgs, cfg.AuthCacheTTL, cfg.KeyTouchInterval, log)
	err := s.initResources(opts)
	if err != nil {
		return nil, err
	}
	if err := s.initMonitoring(); err != nil {
		return nil, err
	}
	if s.knowledge, err = knowledge.New(knowledge.Config{BlobDir: s.res.cfg.BlobDir, PublicURL: cfg.PublicURL, SigningKey: s.res.signKey, Embed: cfg.Embed, DriveBaseURL: cfg.DriveBaseURL}, log, store.Knowledge); err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	gc := cfg.Grading
	gc.Model = cfg.Model
	if s.grading, err = grading.New(gc, log, store.Calls, store.Grading, s.agentGrading); err != nil {
		return nil, fmt.Errorf("control: grading: %w", err)
	}
	if cfg.Model.BaseURL != "" {
		m, err := llm.NewOpenAI(cfg.Model)
		if err != nil {
			return nil, fmt.Errorf("control: model: %w", err)
		}
		s.model = m
	}
	s.app = fiber.New(fiber.Config{
		AppName:   "voiced",
		BodyLimit: cfg.BodyLimit,
		// Bodies are streamed so uploads are read through their limits,
		// never buffered whole; limitBody restores BodyLimit elsewhere.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		ErrorHandler:                 s.errorHandler,
		ReadTimeout:                  30 * time.Second,
		WriteTimeout:                 30 * time.Second,
		IdleTimeout:                  120 * time.Second,
	})
	s.app.Use(s.observe)
	s.rt, err = realtime.NewSessions(realtime.Config{PublicURL: cfg.PublicURL, SigningKey: s.res.signKey, Touch: s.auth.touch},
		log, s.calls, agentSchema{r: s.res}, store.Keys, store.Calls)
	if err != nil {
		return nil, err
	}
	s.sims = simulations.NewWorker(s.simulationDeps(), log)
	sd := s.simulationDeps()
	sd.Wake = s.sims.Wake
	s.suites = simulations.NewScheduler(s.testRunDeps(sd), store.Scenarios, cfg.Suites.Now, log)
	if cfg.Suites.Poll > 0 {
		s.suites.Poll = cfg.Suites.Poll
	}
	s.registerRoutes()
	s.app.Use(s.unrouted)
	ictx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.knowledge.Run(ictx)
	}()
	gdone := make(chan struct{})
	go func() {
		defer close(gdone)
		_ = s.grading.Run(ictx)
	}()
	sdone := make(chan struct{})
	go func() {
		defer close(sdone)
		if !cfg.NoSimulationWorker {
			_ = s.sims.Run(ictx)
		}
	}()
	schdone := make(chan struct{})
	go func() {
		defer close(schdone)
		if !cfg.NoSimulationWorker {
			_ = s.suites.Run(ictx)
		}
	}()
	s.stopIngest = sync.OnceFunc(func() { cancel(); <-done; <-gdone; <-sdone; <-schdone })
	return s, nil
}

// unrouted answers a request no route took: 405 with Allow when the path
// is known under other methods, else 404.
func (s *Server) unrouted(c fiber.Ctx) error {
	if allow := s.allowed(c.Path()); allow != "" {
		c.Set(fiber.HeaderAllow, allow)
		return apiErr(http.StatusMethodNotAllowed, "Method not allowed.")
	}
	return errNotFound
}

// allowed lists the methods the routes serve at path, as an Allow header
// ("" for an unknown path). GET routes answer HEAD too.
func (s *Server) allowed(path string) string {
	var methods []string
	for _, r := range s.routes {
		if pathMatches(r.path, path) && !slices.Contains(methods, r.method) {
			methods = append(methods, r.method)
			if r.method == fiber.MethodGet && !slices.Contains(methods, fiber.MethodHead) {
				methods = append(methods, fiber.MethodHead)
			}
		}
	}
	slices.Sort(methods)
	return strings.Join(methods, ", ")
}

// pathMatches reports whether a request path matches a route pattern in
// Fiber's syntax: ":name" is one non-empty segment, "*" the rest.
func pathMatches(pattern, path string) bool {
	pp := strings.Split(strings.Trim(pattern, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	for i, seg := range pp {
		switch {
		case seg == "*":
			return true
		case i >= len(ps):
			return false
		case strings.HasPrefix(seg, ":"):
			if ps[i] == "" {
				return false
			}
		case seg != ps[i]:
			return false
		}
	}
	return len(pp) == len(ps)
}

// App returns the Fiber application (tests drive it with App().Test).
func (s *Server) App() *fiber.App { return s.app }

// Registry returns the Prometheus registry holding the server's metrics, so
// other components can register theirs on the same /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// Serve serves HTTP on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	return s.app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
}

// Shutdown stops accepting requests, waits for in-flight ones up to ctx's
// deadline, then flushes last-used times.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.app.ShutdownWithContext(ctx)
	s.auth.close(ctx)
	s.stopIngest()
	return err
}

// Close stops background work without serving (tests).
func (s *Server) Close() { s.auth.close(context.Background()); s.stopIngest() }

const (
	localPrincipal = "voiced.principal"
	localErr       = "voiced.err"
	localReqID     = "voiced.reqid"
)

// observe assigns a request id, recovers panics, records metrics and writes
// the access log line.
func (s *Server) observe(c fiber.Ctx) (err error) {
	start := time.Now()
	rid := c.Get("X-Request-Id")
	if rid == "" || len(rid) > 64 {
		rid = strconv.FormatUint(uint64(s.started.UnixMilli()), 36) + "-" + strconv.FormatUint(s.reqSeq.Add(1), 36)
	}
	c.Locals(localReqID, rid)
	c.Set("X-Request-Id", rid)
	func() {
		defer func() {
			if r := recover(); r != nil {
				c.Locals(localErr, errors.New("panic"))
				if s.log != nil {
					s.log.Error("handler panic", "request_id", rid, "panic", r, "stack", string(debug.Stack()))
				}
				err = apiErr(http.StatusInternalServerError, "Internal server error.")
			}
		}()
		err = c.Next()
	}()
	if err != nil {
		if herr := s.errorHandler(c, err); herr != nil {
			return herr
		}
		err = nil
	}
	status := c.Response().StatusCode()
	route := c.Route().Path
	if route == "/" {
		route = "unmatched"
	}
	dur := time.Since(start)
	s.metrics.observe(c.Method(), route, status, dur)
	if s.cfg.AccessLog && s.log != nil {
		attrs := []any{"request_id", rid, "method", c.Method(), "path", c.Path(), "route", route, "status", status, "duration_ms", float64(dur.Microseconds()) / 1000}
		if p, ok := c.Locals(localPrincipal).(*storage.Principal); ok && p != nil {
			attrs = append(attrs, "org_id", p.OrgID, "user_id", p.UserID)
		}
		if e, ok := c.Locals(localErr).(error); ok {
			attrs = append(attrs, "err", e.Error())
			s.log.Error("request", attrs...)
		} else {
			s.log.Info("request", attrs...)
		}
	}
	return nil
}

// agentGrading is grading's view of an agent: whether it grades its
// calls (deployed grading_enabled) and its deployed prompt.
// simulationDeps are the simulations API's and worker's collaborators.
func (s *Server) simulationDeps() simulations.Deps {
	st := s.store
	d := simulations.Deps{Store: st.Simulations, Agents: st.Agents, Numbers: st.Numbers, Balances: st.Billing, Calls: st.Calls,
		Price: s.agentPrice, Simulator: s.res.simulator,
		Recordings: calls.Config{PublicURL: s.cfg.PublicURL, SignKey: s.res.signKey, AudioURLTTL: s.res.cfg.AudioURLTTL},
		WebToken: func(ctx context.Context, orgID, agentID int64) (string, string, int64, error) {
			return s.rt.AgentToken(ctx, orgID, agentID, true)
		}}
	d.TestRunDone = func(ctx context.Context, orgID, testRunID int64) {
		if err := s.testRunDeps(d).Verdicts(ctx, orgID, testRunID, simulations.GradeWait); err != nil {
			s.log.Warn("test run verdicts", "test_run_id", testRunID, "err", err.Error())
		}
	}
	return d
}

// testRunDeps are execute's and the test-run verdicts' collaborators.
func (s *Server) testRunDeps(d simulations.Deps) simulations.TestRunDeps {
	return simulations.TestRunDeps{Deps: d, Scenarios: s.store.Scenarios}
}

// agentPrice is the per-minute price of the agent's product.
func (s *Server) agentPrice(ctx context.Context, orgID, agentID int64) (int64, error) {
	a, err := s.store.Agents.Agent(ctx, orgID, agentID)
	if err != nil {
		return 0, err
	}
	c, err := s.res.decodeConfig(a.Config)
	if err != nil {
		return 0, err
	}
	p, ok := s.res.products[c.Product]
	if !ok {
		p = s.res.products[s.res.cfg.DefaultProduct]
	}
	return p.CentsPerMinute, nil
}

func (s *Server) agentGrading(ctx context.Context, orgID, agentID int64) (bool, string, bool, error) {
	a, err := s.store.Agents.Agent(ctx, orgID, agentID)
	if errors.Is(err, storage.ErrNotFound) {
		return false, "", false, nil
	}
	if err != nil {
		return false, "", false, err
	}
	c, err := s.res.decodeConfig(a.Config)
	if err != nil {
		return false, "", false, err
	}
	return c.GradingEnabled, c.Prompt, true, nil
}
