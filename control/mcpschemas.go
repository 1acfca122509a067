package control

// mcpSchemas are the OpenAPI components of the MCP routes.
var mcpSchemas = map[string]any{
	"JSONRPCRequest": obj(map[string]any{
		"jsonrpc": map[string]any{"type": "string", "enum": []string{"2.0"}},
		"id":      map[string]any{"type": []string{"string", "integer"}, "description": "absent on notifications"},
		"method":  map[string]any{"type": "string", "enum": []string{"initialize", "notifications/initialized", "tools/list", "tools/call"}},
		"params":  anyObject,
	}, "jsonrpc", "method"),
	"JSONRPCResponse": obj(map[string]any{
		"jsonrpc": map[string]any{"type": "string", "enum": []string{"2.0"}},
		"id":      map[string]any{"type": []string{"string", "integer", "null"}},
		"result":  map[string]any{"type": "object", "description": "tools/call: {content, structuredContent, isError}; a tool's error is isError true"},
		"error":   obj(map[string]any{"code": i64, "message": str}, "code", "message"),
	}, "jsonrpc"),
}
