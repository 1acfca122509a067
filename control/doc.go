// Package control is voiced's /v1 REST API on Fiber v3, the transport of
// the control plane: the router and its route table, authentication
// (API keys, personal tokens with X-Service-Org, roles per route), the
// one error handler that turns every error into the shapes of
// spec/api.md section 7, an OpenAPI 3.1 document built from the same
// route table the router is built from, Prometheus metrics and structured
// access logs.
//
// Each domain is a package below it that declares the store interface it
// consumes and returns its routes (control/api is their shared
// vocabulary): orgs (organizations, members, invites), keys, agents,
// voices, numbers (phone numbers, labels, VoIP connections, demo
// provisioning), calls (the call log's read routes: lists, export,
// transcripts, history, grades, signed recordings), calllog (the live
// call's record: admission, events, end, billing, tool events, outbound
// dialing with POST /v1/call), browser (widget calls and mic sessions),
// realtime (realtime sessions: tokens, routes, credentials, slots),
// onboarding, billing, webhook (endpoints and the legacy row), widget
// (publishable keys and the widget's public routes), knowledge, mcp and
// mcptools (the MCP server and the views its tools answer with),
// monitoring and admin (the operator's actions); registerRoutes mounts
// each one with the storage field it needs.
//
// AgentConfig stays here, with its fields, defaults and rules
// (agentconfig.go, agentvalidate.go) and its schema adapter
// (agentschema.go, inlineconfig.go); the domains that carry a
// configuration (agents, calllog, browser, realtime, mcptools) are generic
// over it, and calltypes.go names their instantiations (CallLog,
// Admission, BrowserMedia, Realtime, ...) for the live call (package
// call) and cmd/voiced.
//
// Handlers never keep fiber.Ctx: they copy what they need and pass
// c.Context() (which carries the request deadline) to the store.
package control
