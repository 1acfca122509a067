// Package cluster joins the roles of a scaled-out deployment.
//
// The control role serves the internal API (NewServer, under
// /internal/v1/): the control plane the live call uses (call.Control:
// admission, the call record, its end and billing, tool exchanges,
// trunks, realtime credentials, MCP servers, knowledge) and a blob
// upload, over HTTP and JSON. A media node reaches it with a Client,
// which implements the same interfaces, and keeps itself in the coord
// registry with RunMedia (heartbeats, Leave on shutdown).
//
// The other way, the control plane places calls on media nodes through
// the coord placement: realtime sessions get a node's media_url
// (MediaURL) or are proxied to one (RealtimeProxy), outbound calls go as
// sealed dial commands (Dialer, FollowDials), and browser calls, trunk
// checks and ICE servers are asked of a node's own API (Nodes), as are
// simulation runs' calls, held until they end (Simulator).
//
// Each call a node admits or claims, or the control plane places on it,
// is recorded as that node's (NodeHeader, Owners); the Reaper, run by one
// control replica at a time under a coord lock, ends the calls of a node
// whose heartbeats stopped (end reason node_lost, billed up to its last
// heartbeat, through the call log's Finish, so once).
//
// Every request carries the shared cluster secret as a bearer token
// (compared in constant time); without a secret the API refuses
// everything. Refusals cross the wire as codes and come back as the same
// errors (calllog's Err*, realtime's ErrInvalidCredential, *api.Error
// with its Fields), so a media node answers callers exactly as the
// all-in-one server does. The API is plain HTTP unless given a
// certificate (Listen): keep it on a private network, or behind TLS
// (docs/decisions.md "Control and media roles").
package cluster
