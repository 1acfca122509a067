package control

var (
	verdictEnum = map[string]any{"type": "string", "enum": []string{"operational", "degraded", "outage"}}
	productEnum = map[string]any{"type": "string", "enum": []string{"api", "telephony", "browser_calls", "realtime", "webhooks", "billing"}}
)

// monitoringSchemas are the components of the status and monitoring
// routes (control/monitoring).
var monitoringSchemas = map[string]any{
	"Heartbeat": obj(map[string]any{
		"status":     verdictEnum,
		"checked_at": dt,
		"products": map[string]any{"type": "array", "items": obj(map[string]any{
			"name": productEnum, "label": str, "status": verdictEnum,
			"reasons": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{
				"database_unavailable", "coordination_unavailable", "no_media_capacity", "reduced_media_capacity", "provider_errors", "open_incident"}}},
		}, "name", "label", "status", "reasons")},
		"incidents": map[string]any{"type": "array", "items": ref("PublicIncident")},
	}, "status", "checked_at", "products", "incidents"),
	"PublicIncident": obj(map[string]any{"id": i64, "product": productEnum, "severity": str, "title": str, "status": verdictEnum, "started_at": dt},
		"id", "product", "severity", "title", "status", "started_at"),
	"AzureAlert": obj(map[string]any{
		"schemaId": map[string]any{"type": "string", "const": "azureMonitorCommonAlertSchema"},
		"data": obj(map[string]any{
			"essentials": obj(map[string]any{
				"alertId": str, "alertRule": str,
				"severity":           map[string]any{"type": "string", "enum": []string{"Sev0", "Sev1", "Sev2", "Sev3", "Sev4"}},
				"monitorCondition":   map[string]any{"type": "string", "enum": []string{"Fired", "Resolved"}},
				"firedDateTime":      dt,
				"resolvedDateTime":   dt,
				"description":        str,
				"configurationItems": strList,
			}, "alertRule", "severity", "monitorCondition"),
			"customProperties": obj(map[string]any{"product": productEnum}),
		}, "essentials"),
	}, "schemaId", "data"),
	"GlitchTipAlert": obj(map[string]any{
		"alias": str, "text": str,
		"attachments": map[string]any{"type": "array", "minItems": 1, "maxItems": 50, "items": obj(map[string]any{
			"title": str, "title_link": str, "text": str, "color": str,
			"fields": map[string]any{"type": "array", "items": obj(map[string]any{"title": str, "value": str, "short": boolean})},
		}, "title")},
	}, "attachments"),
	"AlertReceipt": obj(map[string]any{"incidents": map[string]any{"type": "array", "items": obj(map[string]any{
		"id": i64, "product": productEnum, "status": map[string]any{"type": "string", "enum": []string{"open", "resolved"}},
		"new": boolean, "count": i64, "ack_url": map[string]any{"type": "string", "description": "single-use acknowledgement link, only when the incident is new"},
	}, "id", "product", "status", "new", "count")}}, "incidents"),
	"IncidentAck": obj(map[string]any{"id": i64, "product": productEnum, "rule": str, "severity": str,
		"status": map[string]any{"type": "string", "enum": []string{"acknowledged", "resolved"}}, "started_at": dt, "acknowledged_at": dt}),
	"AutoAckInput":  obj(map[string]any{"rule": str, "rules": map[string]any{"type": "array", "items": str, "maxItems": 100}}),
	"AutoAckResult": obj(map[string]any{"acknowledged": i64}, "acknowledged"),
}
