// Package mcp is the Model Context Protocol in voiced's control plane.
//
// Server is voiced itself as an MCP server at POST /v1/mcp (spec 4.12):
// streamable HTTP in stateless mode with JSON responses, so any replica
// answers any request. The router authenticates; only secret API keys
// are accepted (personal tokens get 401, spec 5.6). The six tools read
// and act in the key's organization through the small interfaces
// AgentReader, CallReader and CallPlacer, which the control package
// implements over the same code the REST routes use; a tool's error is
// returned in-band (isError true) with the user-facing text of the REST
// error, never an internal error string. The SDK answers a few protocol
// errors with plain-text 400s; the server rewrites them as JSON-RPC
// errors (-32601 for an unknown method).
package mcp
