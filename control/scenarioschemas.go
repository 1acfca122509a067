package control

// scenarioSchemas are the OpenAPI components of the test-scenario, suite
// and test-run routes (control/scenarios).
var scenarioSchemas = func() map[string]any {
	enum := func(vs ...string) map[string]any { return map[string]any{"type": "string", "enum": vs} }
	strMax := func(n int) map[string]any { return map[string]any{"type": "string", "maxLength": n} }
	i64Null := map[string]any{"type": []string{"integer", "null"}}
	nested := map[string]any{
		"labels": map[string]any{"type": "array", "maxItems": 10, "items": strMax(50)},
		"audio_conditions": obj(map[string]any{"noise_asset": enum("none", "cafe", "street", "car", "office"),
			"snr_db": map[string]any{"type": []string{"integer", "null"}, "enum": []any{0, 5, 10, 20, nil}, "description": "required when noise_asset is not none; null when it is"}}),
		"speech_style": obj(map[string]any{"pace": enum("natural", "slow", "fast"), "disfluencies": enum("none", "light"),
			"accent": enum("default", "en-US", "en-GB", "en-IN", "es-MX", "en-AU", "fr-CA")}),
		"caller_behavior": obj(map[string]any{"long_silence_seconds": map[string]any{"type": "integer", "minimum": 0, "maximum": 15},
			"dtmf_sequence": map[string]any{"type": "string", "pattern": "^[0-9*#]{0,12}$"}, "topic_change": strMax(500)}),
		"telephony": obj(map[string]any{"voicemail_answer": boolean}),
		"direction": enum("inbound", "outbound"),
	}
	scenario := map[string]any{"id": i64, "agent_id": i64, "title": strMax(200), "scenario_prompt": strMax(4000),
		"source": enum("manual", "ai", "production"), "prompt_hash": str, "source_call_id": i64Null,
		"source_issue_trace_id": map[string]any{"type": []string{"string", "null"}, "format": "uuid"}, "source_turn_index": i64Null,
		"latest_verdict": enum("pass", "fail", "unknown"), "is_stale": boolean, "created_at": dt, "updated_at": dt}
	input := map[string]any{"title": strMax(200), "scenario_prompt": strMax(4000)}
	for k, v := range nested {
		scenario[k], input[k] = v, v
	}
	run := obj(map[string]any{"id": i64, "agent_id": i64, "suite_id": map[string]any{"type": []string{"string", "null"}, "format": "uuid"},
		"status": str, "channel": enum("web", "telephony"), "verdict": enum("pass", "fail", "unknown"), "total_count": i64, "pass_count": i64,
		"fail_count": i64, "pass_rate": map[string]any{"type": []string{"number", "null"}}, "prompt_hash": str,
		"regressions": map[string]any{"type": "array", "description": "suite runs: scenarios that passed in the baseline run and fail now",
			"items": obj(map[string]any{"scenario_id": i64, "previous": enum("pass"), "current": enum("fail")}, "scenario_id", "previous", "current")},
		"created_at": dt, "completed_at": dtNull,
		"trigger": enum("manual", "schedule"), "scheduled_for": map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "the schedule slot a scheduled run was started for"},
		"error_message":          map[string]any{"type": "string", "description": "why a scheduled run could not start (status failed)"},
		"verdict_reason":         map[string]any{"type": "string", "description": "suite runs: why the suite rule passed or failed"},
		"critical_failure_count": map[string]any{"type": "integer", "description": "runs whose call has a critical-severity issue report"},
		"baseline_run_id":        map[string]any{"type": []string{"integer", "null"}, "description": "suite runs: the run regressions were computed against"},
		"runs":                   map[string]any{"type": "array", "description": "detail only: {scenario_id, call_id, verdict, ...}", "items": map[string]any{"type": "object"}}})
	suite := map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 120}, "description": strMax(2000), "agent_id": i64,
		"scenario_ids":         map[string]any{"type": "array", "maxItems": 50, "items": i64, "description": "[] = all of the agent's scenarios"},
		"min_pass_rate":        map[string]any{"type": "number", "minimum": 0, "maximum": 1, "default": 1, "description": "fraction of runs that must pass"},
		"no_critical_failures": map[string]any{"type": "boolean", "default": false, "description": "also fail the suite run on any critical-severity failure"},
		"schedule":             map[string]any{"type": "string", "enum": []string{"none", "hourly", "daily", "weekly"}, "default": "none"},
		"channel":              map[string]any{"type": "string", "enum": []string{"web", "telephony"}, "default": "web"},
		"phone_number_id":      map[string]any{"type": []string{"integer", "null"}, "description": "required for telephony"},
		"enabled":              map[string]any{"type": "boolean", "default": true, "description": "false pauses the schedule"}}
	suiteOut := map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "created_at": dt, "updated_at": dt,
		"next_run_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "when the schedule next runs the suite; null for none or disabled"},
		"runs":        map[string]any{"type": "array", "description": "detail only: the 50 most recent runs", "items": ref("TestRun")}}
	for k, v := range suite {
		suiteOut[k] = v
	}
	return map[string]any{
		"TestScenario":      obj(scenario),
		"TestScenarioInput": obj(input),
		"TestScenarioList":  obj(map[string]any{"scenarios": map[string]any{"type": "array", "items": ref("TestScenario")}}, "scenarios"),
		"GenerateScenariosInput": obj(map[string]any{"count": map[string]any{"type": "integer", "minimum": 1, "maximum": 12, "default": 6},
			"include_edge_cases": map[string]any{"type": "boolean", "default": true}, "locale": map[string]any{"type": "string", "default": "en"}}),
		"RefreshScenariosInput": obj(map[string]any{"scenario_ids": map[string]any{"type": "array", "maxItems": 50, "items": i64},
			"only_stale": map[string]any{"type": "boolean", "default": false}}),
		"PromoteScenarioInput": obj(map[string]any{"issue_trace_id": map[string]any{"type": "string", "format": "uuid"},
			"failing_turn_index": map[string]any{"type": "integer", "minimum": 0}}),
		"TestRun": run,
		"ExecuteTestRunInput": obj(map[string]any{"channel": enum("web", "telephony"), "phone_number_id": map[string]any{"type": "integer", "description": "required for telephony; the number must ring the agent"},
			"scenario_ids": map[string]any{"type": "array", "maxItems": 50, "items": i64, "description": "omitted: all of the agent's scenarios"},
			"matrix": obj(map[string]any{"audio_conditions": map[string]any{"type": "array", "maxItems": 5, "items": nested["audio_conditions"]},
				"speech_style":    map[string]any{"type": "array", "maxItems": 7, "items": nested["speech_style"]},
				"caller_behavior": map[string]any{"type": "array", "maxItems": 8, "items": nested["caller_behavior"]},
				"telephony":       map[string]any{"type": "array", "maxItems": 2, "items": nested["telephony"]}}),
			"stagger_seconds":   map[string]any{"type": "integer", "minimum": 0, "maximum": 60, "default": 5},
			"consent_to_charge": map[string]any{"type": "boolean", "description": "required, must be true"}}, "channel", "consent_to_charge"),
		"Suite": obj(suiteOut),
		"SuiteRunInput": obj(map[string]any{"stagger_seconds": map[string]any{"type": "integer", "minimum": 0, "maximum": 60, "default": 5},
			"consent_to_charge": map[string]any{"type": "boolean", "description": "required, must be true"}}, "consent_to_charge"),
		"SuiteInput": obj(suite),
	}
}()
