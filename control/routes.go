package control

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	"github.com/voiced/voiced/control/agents"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/billing"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/issues"
	"github.com/voiced/voiced/control/keys"
	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/control/mcptools"
	"github.com/voiced/voiced/control/monitoring"
	"github.com/voiced/voiced/control/onboarding"
	"github.com/voiced/voiced/control/orgs"
	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/control/scenarios"
	"github.com/voiced/voiced/control/simulations"
	"github.com/voiced/voiced/control/voices"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/control/widget"
	"github.com/voiced/voiced/storage"
)

// authMode says what credential a route needs.
type authMode int

const (
	authNone authMode = iota // public
	authUser                 // any credential; an org is optional (personal tokens)
	authOrg                  // a credential acting in an org
)

// route is one registered endpoint. The router and the OpenAPI document
// are both built from the route table, and a test checks that every route
// the router has is in the document.
type route struct {
	method, path string
	summary, tag string
	auth         authMode
	minRole      storage.Role
	// reqSchema and resSchema name components in the OpenAPI document;
	// resStatus is the success status.
	reqSchema, resSchema string
	resList              bool
	query                []string
	resStatus            int
	errors               []int
	// paymentErrors says 402/422/502/503 may carry a payment error body.
	paymentErrors bool
	// streamBody routes read their body as a stream and bound it
	// themselves; others are refused bodies past Config.BodyLimit.
	streamBody bool
	handler    func(c fiber.Ctx, p *storage.Principal) error
	raw        fiber.Handler // for routes that need no principal (healthz, metrics)
}

func (s *Server) add(r route) {
	if r.resStatus == 0 {
		r.resStatus = http.StatusOK
	}
	s.routes = append(s.routes, r)
	h := r.raw
	if h == nil {
		h = s.wrap(r)
	}
	if !r.streamBody {
		h = s.limitBody(h)
	}
	s.app.Add([]string{r.method}, r.path, h)
}

// limitBody enforces Config.BodyLimit. The server streams request bodies
// (so uploads are never buffered whole), which makes fasthttp hand larger
// bodies to handlers instead of refusing them; routes that do not read a
// stream get the limit back here, as a 400 like any too-large body.
func (s *Server) limitBody(next fiber.Handler) fiber.Handler {
	return func(c fiber.Ctx) error {
		req := c.Request()
		if req.Header.ContentLength() > s.cfg.BodyLimit {
			return fiber.ErrRequestEntityTooLarge
		}
		if st := req.BodyStream(); st != nil && req.Header.ContentLength() < 0 { // chunked: read it through the limit
			b, err := io.ReadAll(io.LimitReader(st, int64(s.cfg.BodyLimit)+1))
			if err != nil {
				return fiber.ErrBadRequest
			}
			if len(b) > s.cfg.BodyLimit {
				return fiber.ErrRequestEntityTooLarge
			}
			req.SetBodyRaw(b)
		}
		return next(c)
	}
}

// wrap authenticates and authorizes before calling the handler.
func (s *Server) wrap(r route) fiber.Handler {
	return func(c fiber.Ctx) error {
		var p *storage.Principal
		if r.auth != authNone {
			var err error
			if p, err = s.auth.principal(c, r.auth == authOrg); err != nil {
				return err
			}
			c.Locals(localPrincipal, p)
			if r.minRole != "" && !p.Role.AtLeast(r.minRole) {
				return errForbidden
			}
		}
		return r.handler(c, p)
	}
}

// registerRoutes builds the route table: the transport's own routes, then
// each domain package's, mounted with the store it declares. Order
// matters only where paths overlap (/v1/orgs/:id before the legacy
// /v1/orgs/:id/* catch-all).
func (s *Server) registerRoutes() {
	s.add(route{method: "GET", path: "/v1/healthz", summary: "Liveness and database reachability", tag: "health", resSchema: "Health", errors: []int{503}, raw: s.healthz})
	s.add(route{method: "GET", path: "/metrics", summary: "Prometheus metrics", tag: "health", raw: adaptor.HTTPHandler(s.metrics.handler().(http.Handler))})
	s.add(route{method: "GET", path: "/v1/openapi.json", summary: "This OpenAPI 3.1 document", tag: "health", raw: s.openapiHandler})

	s.mount(s.monitor.Routes())

	st := s.store
	s.mount(orgs.Routes(st.Orgs, s.auth))
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		s.add(route{method: m, path: "/v1/orgs/:id/*", summary: "Removed org-scoped paths: 410 with the flat path", tag: "orgs", resStatus: 410, raw: legacyOrgPath})
	}
	s.mount(webhook.LegacyRoutes(st.Webhooks))
	s.mount(orgs.MemberRoutes(st.Orgs, s.auth))
	s.mount(keys.Routes(st.Keys, s.auth))
	s.mount(orgs.InviteRoutes(orgs.InviteConfig{PublicURL: s.cfg.PublicURL, InviteTTL: s.cfg.InviteTTL}, st.Orgs, st.Orgs, s.limiter))

	products := make([]agents.Product, len(s.res.cfg.Products))
	for i, p := range s.res.cfg.Products {
		products[i] = agents.Product{Name: p.Name, CentsPerMinute: p.CentsPerMinute, Default: p.Name == s.res.cfg.DefaultProduct}
	}
	s.mount(agents.Routes[AgentConfig](st.Agents, agentSchema{r: s.res, refs: refStores{mcp: st.MCPServers, knowledge: st.Knowledge}}, products))
	s.mount(voices.Routes(s.res.catalog))
	s.mount(s.numbers.Routes())
	s.mount(calls.Routes(calls.Config{PublicURL: s.cfg.PublicURL, SignKey: s.res.signKey, AudioURLTTL: s.res.cfg.AudioURLTTL, BlobDir: s.res.cfg.BlobDir},
		st.Calls, st.Calls, st.Calls, s.calls.ServePlace))
	s.mount(calls.LiveRoutes(st.Calls, st.Calls, s.res.live, s.res.listenKey, &s.res.listen))
	s.mount(s.grading.Routes())
	s.mount(issues.Routes(st.Issues, st.Calls, scenarios.IssueLinks(st.Scenarios)))
	s.mount(onboarding.Routes(st.Onboarding))

	s.mount(billing.Routes(s.log, st.Billing, st.Billing, s.paymentProvider()))
	// webhook.New fails only without a store, and New has checked it.
	first, _ := webhook.New(s.cfg.Webhooks, s.log, st.Outbox)
	s.mount(webhook.EndpointRoutes(st.Webhooks, st.Outbox, first))
	s.mount(s.rt.Routes())

	s.mount(widget.KeyRoutes(st.PublishableKeys, st.PublishableKeys))
	ex := webhook.NewExchanger(widget.HookStore{Legacy: st.Webhooks}, s.cfg.Webhooks.AllowLoopback, nil, s.log)
	s.mount(widget.Routes(s.log, st.PublishableKeys, s.limiter, ex, s.browser))
	s.mount(s.browser.MicRoutes())
	s.mount(s.knowledge.Routes())

	tools := mcptools.New(st.Agents, agents.Schema[AgentConfig](agentSchema{r: s.res}), st.Calls, s.calls)
	s.mount(mcp.NewServer(s.cfg.Version, s.log, tools, tools, tools).Routes())
	s.mount(mcp.ServerRoutes(st.MCPServers, mcp.NewConnector(mcp.ConnectorConfig{AllowLoopback: s.cfg.Webhooks.AllowLoopback})))
	s.mount(scenarios.Routes(scenarios.Deps{Store: st.Scenarios, Agents: st.Agents, Calls: st.Calls, Model: s.model}))
	sd := s.simulationDeps()
	sd.Wake = s.sims.Wake
	s.mount(simulations.Routes(sd))
	s.mount(simulations.TestRunRoutes(s.testRunDeps(sd)))
	s.mount(simulations.SuiteRunRoutes(s.testRunDeps(sd)))
	s.mount(scenarios.SuiteRoutes(scenarios.SuiteDeps{Suites: st.Scenarios, Runs: st.Scenarios, Scenarios: st.Scenarios, Agents: st.Agents, Numbers: st.Numbers,
		Settle: s.testRunDeps(sd).Settle, Now: s.suites.Now}))
}

// paymentProvider is the configured payment provider, or nil: without one
// top-ups answer 503.
func (s *Server) paymentProvider() billing.Provider {
	st, err := payment.NewStripe(s.cfg.Payments)
	if err == nil {
		return monitoring.ReportPayments(st, s.providers)
	}
	if !errors.Is(err, payment.ErrNotConfigured) && s.log != nil {
		s.log.Error("payment provider not usable; top-ups answer 503", "err", err.Error())
	}
	return nil
}

// legacyOrgPath answers the removed /v1/orgs/<id>/... paths with 410 and
// the flat path that replaced them.
func legacyOrgPath(c fiber.Ctx) error {
	rest := strings.Trim(c.Params("*"), "/")
	if rest == "" {
		return apiErr(http.StatusMethodNotAllowed, "Method not allowed.")
	}
	newPath := "/v1/" + rest
	return &APIError{Status: http.StatusGone,
		Detail: "Organization-scoped paths were removed; the organization is inferred from the credential. Use " + newPath + ".",
		Extra:  map[string]any{"legacy_path": c.Path(), "new_path": newPath}}
}

func (s *Server) healthz(c fiber.Ctx) error {
	if err := s.store.DB().PingContext(c.Context()); err != nil {
		return c.Status(http.StatusServiceUnavailable).JSON(fiber.Map{"ok": false, "database": false})
	}
	return c.JSON(fiber.Map{"ok": true, "database": true, "version": s.cfg.Version})
}

// mount adds a domain package's routes.
func (s *Server) mount(rs []api.Route) {
	for _, r := range rs {
		s.add(route{method: r.Method, path: r.Path, summary: r.Summary, tag: r.Tag, auth: authMode(r.Auth), minRole: r.MinRole,
			reqSchema: r.ReqSchema, resSchema: r.ResSchema, resList: r.ResList, query: r.Query, resStatus: r.ResStatus, errors: r.Errors,
			paymentErrors: r.PaymentErrors, streamBody: r.StreamBody, handler: r.Handler, raw: r.Raw})
	}
}
