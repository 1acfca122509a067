// Package mcp is the Model Context Protocol in voiced's control plane,
// both ways, on the official go-sdk.
//
// Server is voiced itself as an MCP server at POST /v1/mcp (spec 4.12):
// streamable HTTP in stateless mode with JSON responses, so any replica
// answers any request. The router authenticates; only secret API keys
// are accepted (personal tokens get 401, spec 5.6). The six tools read
// and act in the key's organization through AgentReader, CallReader and
// CallPlacer, which the control package implements over the code the
// REST routes use; a tool's error is returned in-band (isError true)
// with the user-facing text of the REST error. The SDK's plain-text 400s
// become JSON-RPC errors (-32601 for an unknown method).
//
// ServerRoutes are /v1/mcp-servers: the MCP servers an org's agents use
// as tools. Registering or changing one connects through a Connector
// (every dial through the webhook SSRF guard) and caches its tools as
// function definitions named by ToolName; header values are sealed by
// storage and never returned.
//
// CallCatalog gives a call its MCP tools at its start (CallTools): the
// cached tools of the agent's enabled servers, one session per server
// opened at first use and closed with the call, failures in-band.
package mcp
