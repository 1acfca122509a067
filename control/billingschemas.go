package control

import "github.com/voiced/voiced/control/webhook"

// billingSchemas are the OpenAPI components of billing and webhook
// endpoints (merged by allSchemas).
var billingSchemas = map[string]any{
	"BillingAccount": obj(map[string]any{
		"balance_cents": i64, "balance_usd": map[string]any{"type": "string", "pattern": `^-?[0-9]+\.[0-9]{2}$`},
		"currency": map[string]any{"type": "string", "enum": []string{"usd"}}, "auto_reload_enabled": boolean,
		"auto_reload_minimum_cents": i64, "auto_reload_amount_cents": i64, "auto_reload_monthly_limit_cents": i64Null,
		"has_payment_method": boolean, "has_ever_topped_up": boolean,
	}),
	"BillingPatch": obj(map[string]any{
		"auto_reload_enabled":             boolean,
		"auto_reload_minimum_cents":       map[string]any{"type": "integer", "minimum": 0, "description": "required when enabling"},
		"auto_reload_amount_cents":        map[string]any{"type": "integer", "minimum": 1, "description": "required when enabling"},
		"auto_reload_monthly_limit_cents": map[string]any{"type": []string{"integer", "null"}, "minimum": 0, "description": "cap per UTC calendar month; 0 or null = no cap"},
	}),
	"TopUpInput":                obj(map[string]any{"amount_cents": map[string]any{"type": "integer", "minimum": 1}, "payment_method_id": str}, "amount_cents"),
	"TopUp":                     obj(map[string]any{"payment_intent_id": str, "status": str, "client_secret": str}),
	"SetupIntent":               obj(map[string]any{"setup_intent_id": str, "status": str, "client_secret": str}),
	"DefaultPaymentMethodInput": obj(map[string]any{"payment_method_id": str}, "payment_method_id"),
	"Transaction": obj(map[string]any{
		"id": i64, "kind": map[string]any{"type": "string", "enum": []string{"top_up", "call_usage", "number_fee", "adjustment"}},
		"amount_cents": i64, "balance_after_cents": i64, "description": str, "reference": strNull, "created_at": dt,
	}),
	"PaymentError": obj(map[string]any{"code": str, "message": str, "detail": str, "retryable": boolean,
		"next_action": map[string]any{"type": "string", "enum": []string{"authenticate_payment", "update_payment_method", "retry_payment"}}},
		"code", "message", "detail", "retryable", "next_action"),
	"ProviderEventAck": obj(map[string]any{"received": boolean, "applied": boolean}),
	"WebhookEndpoint": obj(map[string]any{
		"id": map[string]any{"type": "string", "format": "uuid"}, "label": str, "url": str,
		"events":      map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": webhook.EventTypes}},
		"status":      map[string]any{"type": "string", "enum": []string{"active", "disabled", "failing"}},
		"secret_hint": str, "created_at": dt, "updated_at": dt,
	}),
	"WebhookEndpointCreated": map[string]any{"allOf": []any{ref("WebhookEndpoint"), obj(map[string]any{"secret": map[string]any{"type": "string", "pattern": "^[0-9a-f]{48}$", "description": "shown once"}}, "secret")}},
	"WebhookEndpointInput": obj(map[string]any{
		"label": map[string]any{"type": "string", "minLength": 1, "maxLength": 120}, "url": map[string]any{"type": "string", "format": "uri", "maxLength": 2048},
		"events": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": webhook.EventTypes}},
	}, "label", "url"),
	"WebhookEndpointPatch": obj(map[string]any{
		"label": map[string]any{"type": "string", "minLength": 1, "maxLength": 120}, "url": map[string]any{"type": "string", "format": "uri", "maxLength": 2048},
		"events": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": webhook.EventTypes}},
		"status": map[string]any{"type": "string", "enum": []string{"active", "disabled"}},
	}),
	"WebhookTestResult": obj(map[string]any{"success": boolean, "event_id": str, "event_type": str,
		"status": map[string]any{"type": "string", "enum": []string{"delivered", "pending", "failed"}}, "response_code": i64Null, "error": strNull}),
}
