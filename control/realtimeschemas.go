package control

// realtimeSchemas are the OpenAPI components of POST /v1/realtime/sessions.
var realtimeSchemas = map[string]any{
	"RealtimeSessionInput": map[string]any{"type": "object", "properties": map[string]any{
		"agent_id": i64,
		"config":   map[string]any{"type": "object", "description": "inline agent configuration; prompt required; unknown keys are 400 config.<key>"},
	}},
	"RealtimeSession": obj(map[string]any{"call_id": i64, "room_name": str, "media_url": str,
		"token": map[string]any{"type": "string", "description": "bearer credential for GET /v1/realtime, valid one minute, once"}},
		"call_id", "room_name", "media_url", "token"),
}
