package control

// browserSchemas are the OpenAPI components of publishable keys, the
// widget's signalling and mic sessions (merged by allSchemas).
var browserSchemas = func() map[string]any {
	domains := map[string]any{"type": "array", "minItems": 1, "items": str,
		"description": "exact hosts and *.example.com wildcards (subdomains only); localhost and 127.0.0.1 are always allowed"}
	mode := map[string]any{"type": "string", "enum": []string{"agent", "webhook"}}
	name := map[string]any{"type": "string", "minLength": 1, "maxLength": 120}
	iceServers := map[string]any{"type": "array", "description": "RTCIceServer entries for the browser's RTCPeerConnection (empty when the node has no STUN/TURN servers)",
		"items": obj(map[string]any{"urls": map[string]any{"type": "array", "items": str}, "username": str, "credential": str}, "urls")}
	return map[string]any{
		"PublishableKey": obj(map[string]any{"id": i64, "name": str, "key": map[string]any{"type": "string", "pattern": "^pk_live_[0-9a-f]{32}$"},
			"key_prefix": map[string]any{"type": "string", "minLength": 12, "maxLength": 12}, "allowed_domains": domains,
			"is_active": boolean, "is_enabled": boolean, "mode": mode, "agent_id": i64Null, "agent_name": strNull,
			"webhook_url": strNull, "created_at": dt, "updated_at": dt}),
		"PublishableKeyInput": obj(map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 120, "default": "Web Widget"},
			"mode":            map[string]any{"type": "string", "enum": []string{"agent", "webhook"}, "default": "agent"},
			"agent_id":        map[string]any{"type": "integer", "description": "required in agent mode"},
			"webhook_url":     map[string]any{"type": "string", "format": "uri", "description": "HTTPS; required in webhook mode"},
			"allowed_domains": domains, "is_enabled": map[string]any{"type": "boolean", "default": true}}, "allowed_domains"),
		"PublishableKeyPatch": obj(map[string]any{"name": name, "mode": mode, "agent_id": i64Null, "webhook_url": strNull,
			"allowed_domains": domains, "is_enabled": boolean}),
		"PublishableKeyTransferInput": obj(map[string]any{"target_org_id": i64, "mode": map[string]any{"type": "string", "enum": []string{"copy", "move"}},
			"name": name, "agent_id": map[string]any{"type": "integer", "format": "int64", "description": "an agent of the target organization; required for a key in agent mode, the optional fallback agent of one in webhook mode"}}, "target_org_id", "mode"),
		"PublishableKeyTransfer": obj(map[string]any{"source_org_id": i64, "target_org_id": i64, "mode": str,
			"cleared_agent_assignments": boolean, "publishable_key": ref("PublishableKey")}),
		"WidgetCallInput": obj(map[string]any{"publishable_key": map[string]any{"type": "string", "pattern": "^pk_live_"},
			"sdp": map[string]any{"type": "string", "description": "the browser's SDP offer after ICE gathering completed (Opus audio, optionally a data channel named events)"}},
			"publishable_key", "sdp"),
		"WidgetCall": obj(map[string]any{"call_id": i64, "agent_id": i64, "type": map[string]any{"type": "string", "enum": []string{"answer"}},
			"sdp":                  map[string]any{"type": "string", "description": "the SDP answer with every ICE candidate"},
			"max_duration_seconds": map[string]any{"type": "integer", "description": "what the balance pays for; absent for a free product"}}),
		"WidgetICEServers": obj(map[string]any{"ice_servers": iceServers,
			"ice_servers_expire_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "when time-limited TURN credentials expire; null for none or static ones"}}),
		"MicSessionInput": obj(map[string]any{"agent_id": i64}, "agent_id"),
		"MicSession": obj(map[string]any{"call_id": i64, "token": map[string]any{"type": "string", "description": "single-use credential for server_url, valid 5 minutes"},
			"room_name": str, "server_url": map[string]any{"type": "string", "format": "uri", "description": "POST {token, sdp} here for the SDP answer"},
			"expires_at": dt, "ice_servers": iceServers,
			"ice_servers_expire_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time"}}),
		"MicConnectInput": obj(map[string]any{"token": str, "sdp": str}, "token", "sdp"),
		"MicConnect":      obj(map[string]any{"call_id": i64, "type": map[string]any{"type": "string", "enum": []string{"answer"}}, "sdp": str}),
	}
}()
