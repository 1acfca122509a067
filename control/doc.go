// Package control is voiced's /v1 REST API on Fiber v3: authentication,
// organizations, members, keys, invites and the legacy webhook row, with
// the error shapes of spec/api.md section 7, an OpenAPI 3.1 document built
// from the same route table the router is built from, Prometheus metrics
// and structured access logs.
//
// Handlers never keep fiber.Ctx: they copy what they need and pass
// c.Context() (which carries the request deadline) to the store.
package control
