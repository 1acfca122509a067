package control_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestAgents(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newResAPI(t, db, testPool)

		t.Run("create with defaults", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.membK, "  Front desk ", nil)
			require.Equal(t, "Front desk", ag["name"])
			require.Equal(t, "espeak:en-us", ag["voice"])
			require.Equal(t, "storm-base", ag["product"])
			require.Equal(t, "en-US", ag["primary_language"])
			require.Equal(t, float64(1), ag["version"])
			require.Equal(t, false, ag["has_undeployed_changes"])
			require.NotEmpty(t, ag["prompt"])
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, ag["deployed_at"])
			for _, k := range []string{"prompt", "voice", "product", "primary_language", "additional_languages", "background_track",
				"thinking_level", "acknowledgement_prompt_mode", "acknowledgement_prompt", "inbound_speak_order", "outbound_speak_order",
				"first_message", "silence_interval_seconds", "silence_max_checkins", "max_call_duration_seconds", "tools",
				"knowledge_base_ids", "knowledge_document_ids", "placeholders", "telephony", "voicemail", "transfer_destinations", "call_events"} {
				require.Contains(t, ag, k)
				require.Equal(t, ag[k], ag["draft_"+k], "draft_%s starts equal to %s", k, k)
			}
			require.Len(t, ag["call_events"], 6)
			r := a.do("GET", fmt.Sprintf("/v1/agents/%d", id(ag)), w.ownerK, nil)
			require.Equal(t, 200, r.status)
			require.Equal(t, ag, r.obj(t))
		})

		t.Run("create validates and normalizes", func(t *testing.T) {
			w := a.world()
			bad := []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{}, "name"},
				{map[string]any{"name": ""}, "name"},
				{map[string]any{"name": strings.Repeat("n", 121)}, "name"},
				{map[string]any{"name": "x", "voice": "nope"}, "voice"},
				{map[string]any{"name": "x", "voice": "custom:abc123"}, "voice"},
				{map[string]any{"name": "x", "draft_voice": "nope"}, "draft_voice"},
				{map[string]any{"name": "x", "product": "storm-ultra"}, "product"},
				{map[string]any{"name": "x", "primary_language": "english please"}, "primary_language"},
				{map[string]any{"name": "x", "additional_languages": []string{"fr", "??"}}, "additional_languages"},
				{map[string]any{"name": "x", "prompt": 5}, "prompt"},
				{map[string]any{"name": "x", "prompt": nil}, "prompt"},
				{map[string]any{"name": "x", "thinking_level": "max"}, "thinking_level"},
				{map[string]any{"name": "x", "background_track": "disco"}, "background_track"},
				{map[string]any{"name": "x", "acknowledgement_prompt_mode": "custom"}, "acknowledgement_prompt"},
				{map[string]any{"name": "x", "inbound_speak_order": "whoever"}, "inbound_speak_order"},
				{map[string]any{"name": "x", "silence_interval_seconds": 1}, "silence_interval_seconds"},
				{map[string]any{"name": "x", "silence_max_checkins": 11}, "silence_max_checkins"},
				{map[string]any{"name": "x", "max_call_duration_seconds": 10}, "max_call_duration_seconds"},
				{map[string]any{"name": "x", "tools": []any{map[string]any{"name": "bad name!"}}}, "tools"},
				{map[string]any{"name": "x", "tools": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}}, "tools"},
				{map[string]any{"name": "x", "tools": []any{map[string]any{"name": "a", "parameters": map[string]any{"type": "string"}}}}, "tools"},
				{map[string]any{"name": "x", "knowledge_base_ids": []string{"not-a-uuid"}}, "knowledge_base_ids"},
				{map[string]any{"name": "x", "placeholders": []string{""}}, "placeholders"},
				{map[string]any{"name": "x", "telephony": map[string]any{"noise_reduction": "loud"}}, "telephony"},
				{map[string]any{"name": "x", "telephony": map[string]any{"endpointing_ms": 5}}, "telephony"},
				{map[string]any{"name": "x", "voicemail": map[string]any{"action": "leave_message"}}, "voicemail"},
				{map[string]any{"name": "x", "transfer_destinations": []any{map[string]any{"name": "Billing", "number": "555"}}}, "transfer_destinations"},
				{map[string]any{"name": "x", "call_events": []string{"call.graded"}}, "call_events"},
				{map[string]any{"name": "x", "prompt": "a", "draft_prompt": "b"}, "draft_prompt"},
			}
			for _, tc := range bad {
				r := a.do("POST", "/v1/agents", w.membK, tc.body)
				require.Equal(t, 400, r.status, "%v: %s", tc.body, r.body)
				require.Contains(t, r.obj(t), tc.field, "%v: %s", tc.body, r.body)
			}
			ag := a.agent(w.membK, "Polyglot", map[string]any{
				"primary_language":      "en-gb",
				"additional_languages":  []string{"ES-mx", "en-GB", "es-MX", "fr"},
				"voice":                 "espeak:en-us+f3",
				"product":               "storm-pro",
				"knowledge_base_ids":    []string{"0190A2B4-1C2D-7E8F-9A0B-1C2D3E4F5A6B", "0190a2b4-1c2d-7e8f-9a0b-1c2d3e4f5a6b"},
				"tools":                 []any{map[string]any{"name": "book_slot", "description": "Books a slot", "parameters": map[string]any{"type": "object", "properties": map[string]any{"day": map[string]any{"type": "string"}}}}},
				"transfer_destinations": []any{map[string]any{"name": "Front desk", "number": "+14155550199"}},
				"call_events":           []string{"telephony.complete", "telephony.complete"},
				"first_message":         "Hello!",
			})
			require.Equal(t, "en-GB", ag["primary_language"])
			require.Equal(t, []any{"es-MX", "fr"}, ag["additional_languages"])
			require.Equal(t, []any{"0190a2b4-1c2d-7e8f-9a0b-1c2d3e4f5a6b"}, ag["knowledge_base_ids"])
			require.Equal(t, []any{"telephony.complete"}, ag["call_events"])
			tool := ag["tools"].([]any)[0].(map[string]any)
			require.Equal(t, "function", tool["type"])
			require.Equal(t, "Hello!", ag["first_message"])
		})

		t.Run("drafts, direct changes, deploy and versions", func(t *testing.T) {
			w := a.world()
			ag := a.agent(w.ownerK, "Sales", map[string]any{"prompt": "Sell widgets."})
			path := fmt.Sprintf("/v1/agents/%d", id(ag))

			// Staging changes nothing that calls use and records no version.
			r := a.do("PATCH", path, w.membK, map[string]any{"draft_prompt": "Sell gadgets.", "draft_telephony": map[string]any{"endpointing_ms": 800}, "draft_first_message": "Hi there"})
			require.Equal(t, 200, r.status, string(r.body))
			got := r.obj(t)
			require.Equal(t, "Sell widgets.", got["prompt"])
			require.Equal(t, "Sell gadgets.", got["draft_prompt"])
			require.Equal(t, true, got["has_undeployed_changes"])
			tel := got["draft_telephony"].(map[string]any)
			require.Equal(t, float64(800), tel["endpointing_ms"])
			require.Equal(t, "far_field", tel["noise_reduction"], "objects merge")
			require.Equal(t, float64(1), got["version"])

			// A direct change deploys that field (and sets its draft).
			r = a.do("PATCH", path, w.adminK, map[string]any{"thinking_level": "high", "name": "Sales EU"})
			require.Equal(t, 200, r.status, string(r.body))
			got = r.obj(t)
			require.Equal(t, "high", got["thinking_level"])
			require.Equal(t, "high", got["draft_thinking_level"])
			require.Equal(t, float64(2), got["version"])
			require.Equal(t, "Sell gadgets.", got["draft_prompt"], "other drafts stay staged")

			// Deploy promotes exactly the staged fields.
			r = a.do("POST", path+"/deploy", w.membK, nil)
			require.Equal(t, 200, r.status, string(r.body))
			got = r.obj(t)
			require.Equal(t, "Sell gadgets.", got["prompt"])
			require.Equal(t, "Hi there", got["first_message"])
			require.Equal(t, float64(3), got["version"])
			require.Equal(t, false, got["has_undeployed_changes"])
			// Nothing staged: deploy is a no-op.
			r = a.do("POST", path+"/deploy", w.membK, nil)
			require.Equal(t, 200, r.status)
			require.Equal(t, float64(3), r.obj(t)["version"])

			r = a.do("GET", path+"/versions", w.membK, nil)
			require.Equal(t, 200, r.status)
			vl := r.obj(t)
			require.Equal(t, float64(3), vl["count"])
			res := vl["results"].([]any)
			require.Len(t, res, 3)
			v3, v2, v1 := res[0].(map[string]any), res[1].(map[string]any), res[2].(map[string]any)
			require.Equal(t, float64(3), v3["revision"])
			require.Equal(t, []any{"prompt", "first_message", "telephony"}, v3["changed_fields"])
			require.Equal(t, float64(w.membM.ID), v3["created_by_id"])
			snap := v3["snapshot"].(map[string]any)
			require.Equal(t, "Sell gadgets.", snap["prompt"])
			require.Equal(t, "Sales EU", snap["name"])
			require.NotContains(t, snap, "draft_prompt", "snapshots hold the deployed configuration")
			require.Equal(t, []any{"name", "thinking_level"}, v2["changed_fields"])
			require.Equal(t, float64(w.adminM.ID), v2["created_by_id"])
			require.Equal(t, "Sell widgets.", v2["snapshot"].(map[string]any)["prompt"])
			require.Contains(t, v1["changed_fields"], "prompt")
			require.Equal(t, float64(w.ownerM.ID), v1["created_by_id"])

			r = a.do("GET", path+"/versions?limit=1", w.membK, nil)
			require.Equal(t, float64(3), r.obj(t)["count"])
			require.Len(t, r.obj(t)["results"], 1)
			require.Equal(t, 400, a.do("GET", path+"/versions?limit=0", w.membK, nil).status)
			require.Equal(t, 400, a.do("GET", path+"/versions?limit=101", w.membK, nil).status)

			// A PATCH that changes nothing records nothing.
			r = a.do("PATCH", path, w.membK, map[string]any{"prompt": "Sell gadgets."})
			require.Equal(t, float64(3), r.obj(t)["version"])
			// Invalid changes leave the agent untouched.
			r = a.do("PATCH", path, w.membK, map[string]any{"prompt": "ok", "voice": "nope"})
			require.Equal(t, 400, r.status)
			require.Equal(t, "Sell gadgets.", a.do("GET", path, w.membK, nil).obj(t)["prompt"])
			// Clearing nullable fields and lists with null.
			r = a.do("PATCH", path, w.membK, map[string]any{"first_message": nil, "tools": nil})
			require.Equal(t, 200, r.status, string(r.body))
			require.Nil(t, r.obj(t)["first_message"])
			require.Equal(t, []any{}, r.obj(t)["tools"])
		})

		t.Run("org scoping, listing and deletion", func(t *testing.T) {
			w, other := a.world(), a.world()
			first := a.agent(w.ownerK, "First", nil)
			second := a.agent(w.ownerK, "Second", nil)
			l := a.do("GET", "/v1/agents", w.membK, nil).list(t)
			require.Len(t, l, 2)
			require.Equal(t, id(second), id(l[0]), "newest first")
			require.Empty(t, a.do("GET", "/v1/agents", other.ownerK, nil).list(t))
			p := fmt.Sprintf("/v1/agents/%d", id(first))
			require.Equal(t, 404, a.do("GET", p, other.ownerK, nil).status)
			require.Equal(t, 404, a.do("PATCH", p, other.ownerK, map[string]any{"prompt": "x"}).status)
			require.Equal(t, 404, a.do("POST", p+"/deploy", other.ownerK, nil).status)
			require.Equal(t, 404, a.do("GET", p+"/versions", other.ownerK, nil).status)
			require.Equal(t, 404, a.do("DELETE", p, other.ownerK, nil).status)
			require.Equal(t, 404, a.do("GET", "/v1/agents/abc", w.ownerK, nil).status)

			// Deleting an agent clears the numbers assigned to it, as versions by the deleter.
			r := a.do("POST", "/v1/phone-numbers", w.ownerK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.status, string(r.body))
			num := r.obj(t)
			np := fmt.Sprintf("/v1/phone-numbers/%d", id(num))
			require.Equal(t, 200, a.do("PATCH", np, w.ownerK, map[string]any{"inbound_agent_id": id(first)}).status)
			require.Equal(t, 204, a.do("DELETE", p, w.adminK, nil).status)
			require.Equal(t, 404, a.do("GET", p, w.adminK, nil).status)
			require.Nil(t, a.do("GET", np, w.ownerK, nil).obj(t)["inbound_agent_id"])
			v := a.do("GET", np+"/versions?limit=1", w.ownerK, nil).obj(t)["results"].([]any)[0].(map[string]any)
			require.Equal(t, []any{"inbound_agent_id"}, v["changed_fields"])
			require.Equal(t, float64(w.adminM.ID), v["created_by_id"])
			require.Equal(t, 204, a.do("DELETE", np, w.ownerK, nil).status)
		})

		t.Run("products", func(t *testing.T) {
			w := a.world()
			r := a.do("GET", "/v1/agent-products", w.membK, nil)
			require.Equal(t, 200, r.status)
			l := r.list(t)
			require.Len(t, l, 3)
			defaults := 0
			for _, p := range l {
				if p["default"] == true {
					defaults++
					require.Equal(t, "storm-base", p["name"])
					require.Equal(t, float64(9), p["cents_per_minute"])
				}
			}
			require.Equal(t, 1, defaults)
		})
	})
}
