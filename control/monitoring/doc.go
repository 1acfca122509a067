// Package monitoring serves the service's public status and the receivers
// its monitors post alerts to (spec 4.1, 5.9).
//
// GET /v1/status/heartbeat answers, without a credential, one verdict per
// product (operational, degraded or outage) with coarse reason codes,
// computed from a database ping, the coordination store (the node
// registry's Nodes call, which is also its ping), the media nodes'
// draining state, the providers' recent error rates and the active
// incidents. The body never carries host names, error strings or counts;
// a computed answer is kept for Config.CacheTTL so the public endpoint
// cannot be used to load the database.
//
// The receivers (Azure Monitor's common alert schema, GlitchTip's
// Slack-compatible alert webhook) and auto-ack take a shared token in the
// query string, compared in constant time; with no token configured they
// answer 404, as if absent. A firing alert opens an incident, or counts a
// repeat of the open one; Azure's Resolved resolves it. A new incident
// gets a single-use acknowledgement link (GET /v1/monitoring/ack/{token})
// and emits alert.triggered with a sanitized payload to every org with an
// endpoint subscribed to it. An incident degrades its product on the
// heartbeat until it is acknowledged or resolved.
//
// docs/decisions.md ("Status and monitoring") lists the product mapping,
// the thresholds and the payload fields read.
package monitoring
