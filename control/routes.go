package control

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/keys"
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
	resStatus            int
	errors               []int
	// paymentErrors says 402/422/502/503 may carry a payment error body.
	paymentErrors bool
	handler       func(c fiber.Ctx, p *storage.Principal) error
	raw           fiber.Handler // for routes that need no principal (healthz, metrics)
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
	s.app.Add([]string{r.method}, r.path, h)
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

func (s *Server) registerRoutes() {
	s.add(route{method: "GET", path: "/v1/healthz", summary: "Liveness and database reachability", tag: "health", resSchema: "Health", errors: []int{503}, raw: s.healthz})
	s.add(route{method: "GET", path: "/metrics", summary: "Prometheus metrics", tag: "health", raw: adaptor.HTTPHandler(s.metrics.handler().(http.Handler))})
	s.add(route{method: "GET", path: "/v1/openapi.json", summary: "This OpenAPI 3.1 document", tag: "health", raw: s.openapiHandler})

	s.add(route{method: "GET", path: "/v1/orgs", summary: "List the caller's organizations", tag: "orgs", auth: authUser, resSchema: "Org", resList: true, handler: s.listOrgs})
	s.add(route{method: "POST", path: "/v1/orgs", summary: "Create an organization (caller becomes owner)", tag: "orgs", auth: authUser, reqSchema: "OrgInput", resSchema: "Org", resStatus: 201, errors: []int{400}, handler: s.createOrg})
	s.add(route{method: "GET", path: "/v1/orgs/:id", summary: "Get an organization", tag: "orgs", auth: authUser, resSchema: "Org", errors: []int{404}, handler: s.getOrg})
	s.add(route{method: "PATCH", path: "/v1/orgs/:id", summary: "Rename an organization (admin+)", tag: "orgs", auth: authUser, reqSchema: "OrgInput", resSchema: "Org", errors: []int{400, 403, 404}, handler: s.patchOrg})
	s.add(route{method: "DELETE", path: "/v1/orgs/:id", summary: "Delete an organization (owner; no other members; not the caller's only org)", tag: "orgs", auth: authUser, resStatus: 204, errors: []int{400, 403, 404}, handler: s.deleteOrg})
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		s.add(route{method: m, path: "/v1/orgs/:id/*", summary: "Removed org-scoped paths: 410 with the flat path", tag: "orgs", resStatus: 410, raw: s.legacyOrgPath})
	}

	s.add(route{method: "GET", path: "/v1/webhook", summary: "Get the legacy webhook (admin+)", tag: "webhook", auth: authOrg, minRole: storage.RoleAdmin, resSchema: "Webhook", errors: []int{403, 404}, handler: s.getWebhook})
	s.add(route{method: "PUT", path: "/v1/webhook", summary: "Set the legacy webhook URL and rotate its secret (admin+)", tag: "webhook", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "WebhookInput", resSchema: "Webhook", errors: []int{400, 403}, handler: s.putWebhook})
	s.add(route{method: "PATCH", path: "/v1/webhook", summary: "Change the legacy webhook URL, keeping its secret (admin+)", tag: "webhook", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "WebhookInput", resSchema: "Webhook", errors: []int{400, 403}, handler: s.patchWebhook})

	s.add(route{method: "GET", path: "/v1/members", summary: "List members, oldest first", tag: "members", auth: authOrg, resSchema: "Member", resList: true, handler: s.listMembers})
	s.add(route{method: "DELETE", path: "/v1/members/:member_id", summary: "Remove a member (admin+; admins cannot remove admins)", tag: "members", auth: authOrg, minRole: storage.RoleAdmin, resStatus: 204, errors: []int{400, 403, 404}, handler: s.removeMember})
	s.add(route{method: "PATCH", path: "/v1/members/:member_id/role", summary: "Change a member's role (owner)", tag: "members", auth: authOrg, minRole: storage.RoleOwner, reqSchema: "RoleInput", resSchema: "Member", errors: []int{400, 403, 404}, handler: s.setRole})
	s.add(route{method: "POST", path: "/v1/members/:member_id/transfer-ownership", summary: "Transfer ownership (owner); the caller becomes admin", tag: "members", auth: authOrg, minRole: storage.RoleOwner, resSchema: "Detail", errors: []int{400, 403, 404}, handler: s.transferOwnership})
	s.add(route{method: "POST", path: "/v1/leave", summary: "Leave the organization", tag: "members", auth: authOrg, resStatus: 204, errors: []int{403, 404}, handler: s.leave})

	s.mount(keys.Routes(s.store, s.auth))

	s.add(route{method: "GET", path: "/v1/invites", summary: "List invites, newest first (admin+)", tag: "invites", auth: authOrg, minRole: storage.RoleAdmin, resSchema: "Invite", resList: true, errors: []int{403}, handler: s.listInvites})
	s.add(route{method: "POST", path: "/v1/invites", summary: "Invite an email address (admin+; only the owner invites admins)", tag: "invites", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "InviteInput", resSchema: "InviteCreated", resStatus: 201, errors: []int{400, 403}, handler: s.createInvite})
	s.add(route{method: "DELETE", path: "/v1/invites/:invite_id", summary: "Revoke a pending invite (admin+)", tag: "invites", auth: authOrg, minRole: storage.RoleAdmin, resStatus: 204, errors: []int{403, 404, 410}, handler: s.revokeInvite})
	s.add(route{method: "GET", path: "/v1/invitations/:token", summary: "Look at an invite by its token (3 invite access requests per hour per user)", tag: "invites", auth: authUser, resSchema: "Invite", errors: []int{403, 404, 410, 429}, handler: s.viewInvitation})
	s.add(route{method: "POST", path: "/v1/invitations/:token/accept", summary: "Accept an invite (3 invite access requests per hour per user)", tag: "invites", auth: authUser, resSchema: "Member", errors: []int{403, 404, 409, 410, 429}, handler: s.acceptInvitation})
	s.registerResourceRoutes()
	s.registerBillingRoutes()
	s.registerWebhookRoutes()
	s.registerRealtimeRoutes()
	s.registerPublishableKeyRoutes()
}

// legacyOrgPath answers the removed /v1/orgs/<id>/... paths with 410 and
// the flat path that replaced them.
func (s *Server) legacyOrgPath(c fiber.Ctx) error {
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
			reqSchema: r.ReqSchema, resSchema: r.ResSchema, resList: r.ResList, resStatus: r.ResStatus, errors: r.Errors,
			paymentErrors: r.PaymentErrors, handler: r.Handler, raw: r.Raw})
	}
}
