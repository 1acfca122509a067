package control

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"

	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/control/numbers"
)

// allSchemas is the OpenAPI components: the foundation's and these.
func allSchemas() map[string]any {
	out := maps.Clone(schemas)
	maps.Copy(out, resourceSchemas)
	maps.Copy(out, billingSchemas)
	maps.Copy(out, browserSchemas)
	maps.Copy(out, realtimeSchemas)
	maps.Copy(out, liveSchemas)
	maps.Copy(out, monitoringSchemas)
	maps.Copy(out, knowledge.Schemas())
	maps.Copy(out, mcpSchemas)
	maps.Copy(out, issueSchemas)
	maps.Copy(out, scenarioSchemas)
	return out
}

var (
	strNull   = map[string]any{"type": []string{"string", "null"}}
	i64Null   = map[string]any{"type": []string{"integer", "null"}, "format": "int64"}
	numNull   = map[string]any{"type": []string{"number", "null"}}
	strList   = map[string]any{"type": "array", "items": str}
	e164      = map[string]any{"type": "string", "pattern": `^\+[1-9][0-9]{1,14}$`}
	anyObject = map[string]any{"type": "object"}
)

// schemaOf describes a Go type of the agent configuration.
func schemaOf(t reflect.Type) map[string]any {
	if t == reflect.TypeFor[json.RawMessage]() {
		return anyObject
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := maps.Clone(schemaOf(t.Elem()))
		s["type"] = []any{s["type"], "null"}
		return s
	case reflect.String:
		return str
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Bool:
		return boolean
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			props[name] = schemaOf(t.Field(i).Type)
		}
		return obj(props)
	}
	return anyObject
}

// callQualitySchema describes CallQuality: null until a call with media
// ends; each figure null when it does not apply.
func callQualitySchema() map[string]any {
	props := map[string]any{"codec": strNull}
	for _, n := range []string{"packets_sent", "packets_received", "packets_lost", "jitter_buffer_drops", "concealed_ms", "dead_air_ms", "talk_over_ms"} {
		props[n] = i64Null
	}
	for _, n := range []string{"loss_percent", "jitter_ms", "jitter_max_ms", "rtt_ms"} {
		props[n] = numNull
	}
	props["mos"] = map[string]any{"type": []string{"number", "null"}, "minimum": 1, "maximum": 4.5, "description": "ITU-T G.107 E-model estimate"}
	props["response_latency_ms"] = map[string]any{"type": []string{"object", "null"}, "description": "end of a caller turn to the agent's first audio",
		"properties": map[string]any{"p50": i64, "p95": i64, "max": i64, "turns": i64}}
	return map[string]any{"type": []string{"object", "null"}, "properties": props,
		"description": "media quality measured over the call (milliseconds); null for calls without media or in progress"}
}

// configDescriptions document config fields whose name does not say it all.
var configDescriptions = map[string]string{
	"knowledge_base_ids":     "knowledge bases of the organization the agent searches mid-call (search_knowledge_base)",
	"knowledge_document_ids": "knowledge documents of the organization the agent searches mid-call, besides those of its bases",
	"knowledge_retrieve_before_reply": "search the agent's knowledge with the caller's last turn before each answer and add the passages " +
		"to that model request, with no tool call (default false)",
	"grading_enabled": "grade every finished call automatically with the AI grader (default true); POST /v1/calls/{id}/grade grades on demand either way",
}

// agentSchemas returns the Agent object and its input: every config field
// X and draft_X.
func agentSchemas() (agent, input map[string]any) {
	t := reflect.TypeFor[AgentConfig]()
	props := map[string]any{"id": i64, "name": str, "version": i64, "has_undeployed_changes": boolean, "created_at": dt, "updated_at": dt, "deployed_at": dtNull}
	in := map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 120}}
	for _, f := range configFields {
		sc := schemaOf(t.Field(f.index).Type)
		if d, ok := configDescriptions[f.name]; ok {
			sc = maps.Clone(sc)
			sc["description"] = d
		}
		if f.name == "mcp_tool_search_threshold" {
			sc = map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 40,
				"description": "over this many tools from the agent's MCP servers, the model is offered one tool_search tool that loads matching definitions on demand instead of all of them"}
		}
		props[f.name], props["draft_"+f.name] = sc, sc
		in[f.name], in["draft_"+f.name] = sc, sc
	}
	return obj(props), obj(in)
}

var resourceSchemas = func() map[string]any {
	agent, agentIn := agentSchemas()
	number := obj(map[string]any{"id": i64, "number": e164, "label": str, "source": map[string]any{"type": "string", "enum": []string{"demo", "voip"}},
		"status":           map[string]any{"type": "string", "enum": []string{"provisioning", "active", "failed", "released"}},
		"inbound_agent_id": i64Null, "outbound_agent_id": i64Null, "voip_connection_id": i64Null,
		"voip_verification_status": map[string]any{"type": "string", "enum": []string{"unverified", "verified", "failed"}},
		"voip_last_verified_at":    dtNull, "created_at": dt, "updated_at": dt})
	call := obj(map[string]any{"call_id": i64, "agent_id": i64Null, "agent_variant_id": i64Null, "agent_variant_label": strNull,
		"direction": map[string]any{"type": "string", "enum": []string{"inbound", "outbound", "test", "web"}}, "from_number": str, "to_number": str,
		"start_time": dtNull, "end_time": dtNull, "duration_seconds": i64Null,
		"status": map[string]any{"type": "string", "enum": []string{"in_progress", "completed", "failed"}}, "end_reason": strNull,
		"recording_url": strNull, "recording_started_at": dtNull, "is_simulation": boolean,
		"is_test_call":     map[string]any{"type": "boolean", "deprecated": true, "description": "alias of is_simulation"},
		"is_scenario_call": boolean, "prompt_snapshot": strNull, "tool_snapshot": map[string]any{"type": []string{"array", "null"}},
		"worker_execution_name": strNull, "media_room_name": strNull, "media_room_sid": strNull, "product": strNull, "voice": strNull,
		"billable_minutes": numNull, "billing_total_cents": i64Null, "billed_at": dtNull, "grade_score": i64Null, "grade_status": strNull,
		"grade_updated_at": dtNull, "call_outcome": strNull, "issue_count": i64, "critical_issue_count": i64, "quality": callQualitySchema()})
	turn := obj(map[string]any{"role": map[string]any{"type": "string", "enum": []string{"user", "assistant"}}, "text": str, "start_ms": i64, "end_ms": i64, "interrupted": boolean})
	step := obj(map[string]any{"completed": boolean, "completed_at": dtNull})
	return map[string]any{
		"Agent":       agent,
		"AgentInput":  agentIn,
		"Product":     obj(map[string]any{"name": str, "cents_per_minute": i64, "default": boolean}),
		"VersionList": obj(map[string]any{"count": i64, "results": map[string]any{"type": "array", "items": obj(map[string]any{"id": i64, "revision": i64, "created_by_id": i64Null, "created_at": dt, "snapshot": anyObject, "changed_fields": strList})}}),
		"VoiceCatalog": obj(map[string]any{"voices": map[string]any{"type": "array", "items": obj(map[string]any{"name": str, "display_name": str, "provider": str,
			"category": str, "gender": strNull, "languages": strList})}, "languages": strList, "surcharges": anyObject}),
		"PhoneNumber":       number,
		"PhoneNumberInput":  obj(map[string]any{"area_code": map[string]any{"type": "string", "pattern": "^[0-9]{3}$"}, "city": str, "state": map[string]any{"type": "string", "pattern": "^[A-Za-z]{2}$"}, "label": str, "source": map[string]any{"type": "string", "enum": []string{"demo", "voip"}, "default": "demo"}, "number": e164, "voip_connection_id": i64}),
		"PhoneNumberUpdate": obj(map[string]any{"inbound_agent_id": i64Null, "outbound_agent_id": i64Null, "label": str, "status": map[string]any{"type": "string", "enum": []string{"active", "released"}}}),
		"TransferInput":     obj(map[string]any{"target_org_id": i64}, "target_org_id"),
		"NumberTransfer":    obj(map[string]any{"source_org_id": i64, "target_org_id": i64, "cleared_agent_assignments": boolean, "phone_number": ref("PhoneNumber")}),
		"VoIPVerification": obj(map[string]any{"phone_number_id": i64, "status": str, "voip_verification_status": str, "provider_charge_estimate_cents": i64,
			"provider_charge_currency": str, "provider_charge_note": str, "detail": str}),
		"NumberLabel":      obj(map[string]any{"id": i64, "phone_number": e164, "label": str, "created_at": dt, "updated_at": dt}),
		"NumberLabelInput": obj(map[string]any{"phone_number": e164, "label": map[string]any{"type": "string", "minLength": 1, "maxLength": 100}}, "phone_number", "label"),
		"VoIPConnection": obj(map[string]any{"id": i64, "name": str, "host": str, "port": i64, "transport": map[string]any{"type": "string", "enum": []string{"udp", "tcp", "tls"}},
			"username": str, "has_password": boolean, "outbound_proxy": str, "allowed_inbound_addresses": strList, "codecs": strList, "phone_number_count": i64, "created_at": dt, "updated_at": dt}),
		"VoIPConnectionInput": obj(map[string]any{"name": str, "host": str, "port": i64, "transport": map[string]any{"type": "string", "enum": []string{"udp", "tcp", "tls"}},
			"username": str, "password": map[string]any{"type": []string{"string", "null"}, "writeOnly": true}, "outbound_proxy": str, "allowed_inbound_addresses": strList,
			"codecs": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": numbers.TrunkCodecs}}}),
		"VoIPImportInput":   obj(map[string]any{"numbers": map[string]any{"type": "array", "items": e164, "minItems": 1, "maxItems": 100}, "label": str}, "numbers"),
		"Call":              call,
		"CallList":          obj(map[string]any{"results": map[string]any{"type": "array", "items": ref("Call")}, "total": i64, "limit": i64, "offset": i64}),
		"Transcript":        obj(map[string]any{"call_id": i64, "recording_started_at": dtNull, "turns": map[string]any{"type": "array", "items": turn}}),
		"CallHistory":       obj(map[string]any{"call_id": i64, "items": map[string]any{"type": "array", "items": anyObject}}),
		"AudioURL":          obj(map[string]any{"call_id": i64, "url": str, "expires_at": dt, "content_type": str}),
		"CallGrade":         obj(map[string]any{"id": i64, "status": str, "score": i64Null, "call_outcome": strNull, "outcome_reasoning": str, "summary": str, "rubric_breakdown": anyObject, "detected_issues": map[string]any{"type": "array"}, "grader_model": str, "grader_version": str, "graded_at": dtNull}),
		"OutboundCallInput": obj(map[string]any{"agent_id": i64, "from_number": e164, "to_number": e164}, "agent_id", "from_number", "to_number"),
		"Onboarding":        obj(map[string]any{"steps": obj(map[string]any{"agent": step, "billing": step, "phone": step, "call": step}), "all_complete": boolean, "dismissed": boolean, "dismissed_at": dtNull}),
	}
}()
