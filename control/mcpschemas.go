package control

// mcpSchemas are the OpenAPI components of the MCP routes.
var mcpSchemas = map[string]any{
	"MCPServer": obj(map[string]any{
		"id": map[string]any{"type": "string", "format": "uuid"}, "display_name": str, "url": str,
		"transport": map[string]any{"type": "string", "enum": []string{"streamable_http"}},
		"headers":   map[string]any{"type": "array", "description": "key names only, to admins; [] to others", "items": obj(map[string]any{"key": str}, "key")},
		"enabled":   boolean, "last_tools_sync_at": dtNull,
		"cached_tools": map[string]any{"type": "array", "items": obj(map[string]any{
			"type": map[string]any{"type": "string", "enum": []string{"function"}}, "name": map[string]any{"type": "string", "description": "mcp_<server-id>_<tool>, sanitised to [A-Za-z0-9_-]{1,64}"},
			"description": str, "parameters": anyObject, "mcp": obj(map[string]any{"server_id": str, "tool_name": str}, "server_id", "tool_name")})},
		"created_at": dt, "updated_at": dt,
	}),
	"MCPServerInput": obj(map[string]any{
		"display_name": map[string]any{"type": "string", "minLength": 1, "maxLength": 255},
		"url":          map[string]any{"type": "string", "format": "uri", "maxLength": 2048},
		"transport":    map[string]any{"type": "string", "enum": []string{"streamable_http"}, "default": "streamable_http"},
		"headers":      map[string]any{"type": "array", "items": obj(map[string]any{"key": str, "value": map[string]any{"type": "string", "description": "empty on PATCH keeps the stored value"}}, "key")},
		"enabled":      map[string]any{"type": "boolean", "default": true},
	}, "display_name", "url"),
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
