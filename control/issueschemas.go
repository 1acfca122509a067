package control

// issueSchemas are the OpenAPI components of the issue report routes
// (control/issues).
var issueSchemas = func() map[string]any {
	sev := map[string]any{"type": "string", "enum": []string{"info", "warning", "critical"}}
	status := map[string]any{"type": "string", "enum": []string{"open", "acknowledged", "resolved"}}
	uuid := map[string]any{"type": "string", "format": "uuid"}
	report := obj(map[string]any{"id": i64, "trace_id": uuid, "call_id": i64, "agent_id": i64Null,
		"source": map[string]any{"type": "string", "enum": []string{"user", "system"}}, "severity": sev, "status": status,
		"title": str, "description": str, "what_went_wrong": str, "suggested_fix": str, "timestamp_seconds": i64Null,
		"failing_turn_index": i64Null, "detected_issue_ref": strNull, "metadata": anyObject, "reported_by_id": i64Null,
		"linked_test_cases":  map[string]any{"type": "array", "items": anyObject, "description": "scenarios promoted from this report; [] until scenarios exist"},
		"regression_guarded": boolean, "created_at": dt, "updated_at": dt})
	return map[string]any{
		"IssueReport": report,
		"IssueReportInput": obj(map[string]any{"title": map[string]any{"type": "string", "minLength": 1, "maxLength": 255},
			"severity":    map[string]any{"type": "string", "enum": []string{"info", "warning", "critical"}, "default": "warning"},
			"description": str, "timestamp_seconds": map[string]any{"type": []string{"integer", "null"}, "minimum": 0},
			"failing_turn_index": map[string]any{"type": []string{"integer", "null"}, "minimum": 0}, "metadata": anyObject}, "title"),
		"IssueReportList":  obj(map[string]any{"results": map[string]any{"type": "array", "items": ref("IssueReport")}, "total": i64, "limit": i64, "offset": i64}),
		"IssueStatusInput": obj(map[string]any{"status": status}, "status"),
		"IssueBulkInput":   obj(map[string]any{"trace_ids": map[string]any{"type": "array", "items": uuid, "minItems": 1, "maxItems": 500}, "status": status}, "trace_ids", "status"),
		"IssueBulkUpdated": obj(map[string]any{"updated": i64}, "updated"),
	}
}()
