package control

// liveSchemas are the OpenAPI components of the live call routes:
// POST /v1/calls/{call_id}/whisper and /listen (spec 4.14).
var liveSchemas = map[string]any{
	"WhisperInput": obj(map[string]any{"text": map[string]any{"type": "string", "minLength": 1, "maxLength": 2000,
		"description": "guidance the agent takes into its context from its next turn; trimmed, never spoken"}}, "text"),
	"Whisper": obj(map[string]any{"call_id": i64, "whisper_id": str, "delivered_at": dt}, "call_id", "whisper_id", "delivered_at"),
	"ListenInput": obj(map[string]any{"format": map[string]any{"type": "string",
		"enum":        []string{"pcm16", "g711_ulaw", "g711_alaw", "audio/pcm", "audio/pcmu", "audio/pcma"},
		"description": "audio of the socket (also accepted as ?format=; the body wins): pcm16 (default) is 16-bit little-endian PCM at 16 kHz, the G.711 ones 8 kHz"}}),
	"Listen": obj(map[string]any{"call_id": i64,
		"token":       map[string]any{"type": "string", "description": "listen-only credential of this call, for the socket (?token= or Authorization: Bearer)"},
		"url":         map[string]any{"type": "string", "description": "the WebSocket to open, token included: ws(s)://<node holding the call>/v1/calls/{call_id}/listen?token=..."},
		"expires_in":  map[string]any{"type": "integer", "description": "seconds the token may be used to connect (60); an open socket lasts until the call ends"},
		"expires_at":  dt,
		"format":      map[string]any{"type": "string", "enum": []string{"pcm16", "g711_ulaw", "g711_alaw"}},
		"sample_rate": map[string]any{"type": "integer", "enum": []int{16000, 8000}},
		"channels":    map[string]any{"type": "integer", "enum": []int{1}},
		"frame_ms":    map[string]any{"type": "integer", "description": "audio per binary WebSocket message (20)"}},
		"call_id", "token", "url", "expires_in", "expires_at", "format", "sample_rate", "channels", "frame_ms"),
}
