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
// provisioning), calls (the call log: lists, export, transcripts,
// history, grades, signed recordings), onboarding, billing, webhook
// (endpoints and the legacy row), widget (publishable keys and the
// widget's public routes) and monitoring; registerRoutes mounts each one
// with the storage field it needs. realtime has no routes of its own: it
// issues and redeems the session tokens of POST /v1/realtime/sessions. What the live call (package call)
// reaches stays here for now, because it trades in control's Admission
// and AgentConfig: CallLog (admission, events, end, billing), outbound
// calls, browser and mic sessions, and the realtime sessions' routes and
// credentials (Realtime, which implements call.Credentials).
//
// Handlers never keep fiber.Ctx: they copy what they need and pass
// c.Context() (which carries the request deadline) to the store.
package control
