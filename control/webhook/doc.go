// Package webhook delivers webhook events to the URLs organizations
// register, and runs the legacy URL's blocking exchanges. It also serves
// the routes that manage them: the endpoints (EndpointRoutes, whose test
// route makes the first attempt itself) and the legacy /v1/webhook row
// (LegacyRoutes).
//
// Delivery (spec sections 6.2 and 8) is at-least-once from a durable outbox
// in the database: storage writes an event and one delivery per destination
// in the same transaction as the state change that emits it, and a Worker
// claims due deliveries under a lease, POSTs them and records the attempt.
// A worker that dies mid-delivery (even by SIGKILL) loses nothing: its
// lease runs out and another worker, or the restarted one, attempts the
// delivery again with the same event_id. Receivers dedupe on event_id.
//
// Attempts are made at 0, 1 m, 5 m, 30 m, 2 h, 6 h, 12 h and 24 h after the
// first, each bounded by 30 s; redirects are never followed; any non-2xx
// status is a failure. When the eighth attempt fails the delivery fails and
// an active endpoint becomes failing: it gets no traffic until the user
// sets it active again, which resumes its pending deliveries. The legacy
// URL gets a single attempt.
//
// Every request is signed twice over the raw body: X-Service-Signature is
// the hex HMAC-SHA256 keyed with the secret string, and the Standard
// Webhooks headers (webhook-id = event_id, webhook-timestamp,
// webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>") let
// receivers reject replays with an off-the-shelf verifier; its key is the
// secret decoded as base64 (after any "whsec_" prefix), which is what those
// libraries do with the secret they are given.
//
// All outbound HTTP goes through a dialer that connects only to public
// addresses, checked on the resolved address of every connection (so DNS
// rebinding cannot reach inside). Loopback is allowed only for the hosts
// "localhost", "127.0.0.1" and "::1", and only when the operator enables it.
package webhook
