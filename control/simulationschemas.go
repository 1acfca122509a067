package control

// simulationSchemas are the OpenAPI components of the simulations routes
// (control/simulations, spec 2.11 and 4.7).
var simulationSchemas = func() map[string]any {
	enum := func(vs ...string) map[string]any { return map[string]any{"type": "string", "enum": vs} }
	input := map[string]any{
		"target_type":       enum("agent", "phone_number"),
		"target_id":         i64,
		"direction":         map[string]any{"type": "string", "enum": []string{"outbound", "inbound"}, "default": "outbound"},
		"target_number":     map[string]any{"type": "string", "description": "E.164 override; empty = the platform default (the target number itself)"},
		"scenario_prompt":   map[string]any{"type": "string", "maxLength": 4000},
		"language":          map[string]any{"type": "string", "description": "ISO 639 or BCP-47; the simulated caller speaks en, es and fr"},
		"primary_language":  map[string]any{"type": "string", "description": "alias of language"},
		"simulator_product": map[string]any{"type": "string", "enum": []string{"testing", "spark"}, "default": "testing"},
		"consent_to_charge": map[string]any{"type": "boolean", "description": "required, must be true"},
	}
	batch := map[string]any{
		"count":            map[string]any{"type": "integer", "minimum": 1, "maximum": 10, "default": 1, "description": "runs in the batch (or the number of scenario_prompts)"},
		"stagger_seconds":  map[string]any{"type": "integer", "minimum": 0, "maximum": 60, "default": 5, "description": "delay between one run's start and the next"},
		"scenario_prompts": map[string]any{"type": "array", "maxItems": 10, "items": map[string]any{"type": "string", "maxLength": 4000}, "description": "one prompt per run, instead of scenario_prompt"},
	}
	for k, v := range input {
		batch[k] = v
	}
	run := map[string]any{"id": i64, "target_type": enum("agent", "phone_number"), "target_id": i64Null, "target_name": str, "agent_name": strNull,
		"direction": enum("outbound", "inbound"), "mode": enum("bot", "sip"), "target_number": str, "scenario_prompt": str,
		"status": enum("queued", "in_progress", "completed", "failed"), "charge_multiplier": map[string]any{"type": "number"},
		"estimated_cost_cents": i64Null, "call_id": i64Null, "error_message": str, "metadata": map[string]any{"type": "object"},
		"requested_by_id": i64Null, "started_at": dtNull, "completed_at": dtNull, "created_at": dt, "updated_at": dt,
		"duration_seconds": i64Null, "recording_url": strNull,
		"transcript": map[string]any{"type": "array", "items": obj(map[string]any{"role": str, "content": str, "timestamp": dt})},
		"grade":      map[string]any{"oneOf": []any{ref("CallGrade"), map[string]any{"type": "null"}}},
		"batch_id":   i64Null, "language": str, "simulator_product": str, "charged_cents": i64Null}
	return map[string]any{
		"SimulationInput":      obj(input, "target_type", "target_id", "consent_to_charge"),
		"SimulationBatchInput": obj(batch, "target_type", "target_id", "consent_to_charge"),
		"SimulationRun":        obj(run),
		"SimulationBatch": obj(map[string]any{"id": i64, "status": enum("in_progress", "completed", "failed"), "target_type": str, "target_id": i64,
			"count": i64, "stagger_seconds": i64, "run_ids": map[string]any{"type": "array", "items": i64}, "requested_by_id": i64Null,
			"created_at": dt, "updated_at": dt}),
	}
}()
