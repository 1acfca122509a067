// Package cluster is the internal API between the roles of a scaled-out
// deployment: the control role serves the control plane the live call
// uses (call.Control: admission, the call record, its end and billing,
// tool exchanges, trunks, realtime credentials, MCP servers, knowledge)
// and a blob upload, over HTTP and JSON under /internal/v1/; a media node
// reaches it with a Client, which implements the same interfaces.
//
// Every request carries the shared cluster secret as a bearer token
// (compared in constant time); without a secret the API refuses
// everything. Refusals cross the wire as codes and come back as the same
// errors (calllog's Err*, realtime's ErrInvalidCredential, *api.Error
// with its Fields), so a media node answers callers exactly as the
// all-in-one server does. The API is plain HTTP: put it on a private
// network, or behind TLS (docs/decisions.md "Internal API").
package cluster
