package agents_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestAgents(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.NewResources(t, db, controltest.Pool)

		t.Run("create with defaults", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.MembK, "  Front desk ", nil)
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
				"knowledge_base_ids", "knowledge_document_ids", "knowledge_retrieve_before_reply", "placeholders", "telephony", "voicemail", "transfer_destinations", "call_events"} {
				require.Contains(t, ag, k)
				require.Equal(t, ag[k], ag["draft_"+k], "draft_%s starts equal to %s", k, k)
			}
			require.Len(t, ag["call_events"], 6)
			require.EqualValues(t, 40, ag["mcp_tool_search_threshold"])
			require.Equal(t, false, ag["knowledge_retrieve_before_reply"], "off by default")
			require.Equal(t, true, ag["grading_enabled"], "grading on by default")
			r := a.Do("GET", fmt.Sprintf("/v1/agents/%d", controltest.ID(ag)), w.OwnerK, nil)
			require.Equal(t, 200, r.Status)
			require.Equal(t, ag, r.Obj(t))
		})

		t.Run("create validates and normalizes", func(t *testing.T) {
			w := a.World()
			kb := a.Do("POST", "/v1/knowledge-bases", w.AdminK, map[string]any{"name": "Menu"})
			require.Equal(t, 201, kb.Status, string(kb.Body))
			kbID := kb.Obj(t)["id"].(string)
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
				{map[string]any{"name": "x", "mcp_tool_search_threshold": 0}, "mcp_tool_search_threshold"},
				{map[string]any{"name": "x", "mcp_tool_search_threshold": 1001}, "mcp_tool_search_threshold"},
				{map[string]any{"name": "x", "prompt": "a", "draft_prompt": "b"}, "draft_prompt"},
			}
			for _, tc := range bad {
				r := a.Do("POST", "/v1/agents", w.MembK, tc.body)
				require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
				require.Contains(t, r.Obj(t), tc.field, "%v: %s", tc.body, r.Body)
			}
			ag := a.Agent(w.MembK, "Polyglot", map[string]any{
				"primary_language":      "en-gb",
				"additional_languages":  []string{"ES-mx", "en-GB", "es-MX", "fr"},
				"voice":                 "espeak:en-us+f3",
				"product":               "storm-pro",
				"knowledge_base_ids":    []string{strings.ToUpper(kbID), kbID},
				"tools":                 []any{map[string]any{"name": "book_slot", "description": "Books a slot", "parameters": map[string]any{"type": "object", "properties": map[string]any{"day": map[string]any{"type": "string"}}}}},
				"transfer_destinations": []any{map[string]any{"name": "Front desk", "number": "+14155550199"}},
				"call_events":           []string{"telephony.complete", "telephony.complete"},
				"first_message":         "Hello!",
			})
			require.Equal(t, "en-GB", ag["primary_language"])
			require.Equal(t, []any{"es-MX", "fr"}, ag["additional_languages"])
			require.Equal(t, []any{kbID}, ag["knowledge_base_ids"])
			require.Equal(t, []any{"telephony.complete"}, ag["call_events"])
			tool := ag["tools"].([]any)[0].(map[string]any)
			require.Equal(t, "function", tool["type"])
			require.Equal(t, "Hello!", ag["first_message"])
		})

		t.Run("knowledge ids must be the organization's", func(t *testing.T) {
			w, other := a.World(), a.World()
			newBase := func(w controltest.World) string {
				r := a.Do("POST", "/v1/knowledge-bases", w.AdminK, map[string]any{"name": "Policies"})
				require.Equal(t, 201, r.Status, string(r.Body))
				return r.Obj(t)["id"].(string)
			}
			newDoc := func(w controltest.World) string {
				r := a.Do("POST", "/v1/knowledge/documents", w.AdminK, map[string]any{"name": "Hours", "content": "We open at nine."})
				require.Equal(t, 201, r.Status, string(r.Body))
				return r.Obj(t)["documents"].([]any)[0].(map[string]any)["id"].(string)
			}
			base, doc := newBase(w), newDoc(w)
			theirBase, theirDoc := newBase(other), newDoc(other)
			unknown := storage.NewUUID()
			bad := []struct {
				body  map[string]any
				field string
				id    string
			}{
				{map[string]any{"knowledge_base_ids": []string{base, theirBase}}, "knowledge_base_ids", theirBase},
				{map[string]any{"knowledge_base_ids": []string{unknown}}, "knowledge_base_ids", unknown},
				{map[string]any{"knowledge_base_ids": []string{doc}}, "knowledge_base_ids", doc},
				{map[string]any{"knowledge_document_ids": []string{theirDoc}}, "knowledge_document_ids", theirDoc},
				{map[string]any{"knowledge_document_ids": []string{base}}, "knowledge_document_ids", base},
				{map[string]any{"draft_knowledge_document_ids": []string{doc, unknown}}, "draft_knowledge_document_ids", unknown},
			}
			before := a.Do("GET", "/v1/agents", w.OwnerK, nil).List(t)
			ag := a.Agent(w.MembK, "Librarian", nil)
			path := fmt.Sprintf("/v1/agents/%d", controltest.ID(ag))
			for _, tc := range bad {
				body := map[string]any{"name": "Knows"}
				for k, v := range tc.body {
					body[k] = v
				}
				r := a.Do("POST", "/v1/agents", w.MembK, body)
				require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
				msgs := r.Obj(t)[tc.field]
				require.NotNil(t, msgs, "%v: %s", tc.body, r.Body)
				require.Contains(t, fmt.Sprint(msgs), tc.id, "the message names the id")
				require.Len(t, r.Obj(t), 1, "only %s is wrong: %s", tc.field, r.Body)

				r = a.Do("PATCH", path, w.MembK, tc.body)
				require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Body)
				require.Contains(t, r.Obj(t), tc.field)
			}
			require.Len(t, a.Do("GET", "/v1/agents", w.OwnerK, nil).List(t), len(before)+1, "no refused agent was stored")
			got := a.Do("GET", path, w.OwnerK, nil).Obj(t)
			require.Equal(t, ag, got, "no refused change was saved")

			r := a.Do("PATCH", path, w.MembK, map[string]any{"knowledge_base_ids": []string{base}, "knowledge_document_ids": []string{strings.ToUpper(doc)},
				"knowledge_retrieve_before_reply": true})
			require.Equal(t, 200, r.Status, string(r.Body))
			got = r.Obj(t)
			require.Equal(t, []any{base}, got["knowledge_base_ids"])
			require.Equal(t, []any{doc}, got["knowledge_document_ids"])
			require.Equal(t, true, got["knowledge_retrieve_before_reply"])
			// A base deleted later does not block changes to other fields.
			require.Equal(t, 204, a.Do("DELETE", "/v1/knowledge-bases/"+base, w.AdminK, nil).Status)
			r = a.Do("PATCH", path, w.MembK, map[string]any{"prompt": "Look things up."})
			require.Equal(t, 200, r.Status, string(r.Body))
			// The other organization's ids are refused to it as well.
			r = a.Do("POST", "/v1/agents", other.MembK, map[string]any{"name": "Nosy", "knowledge_document_ids": []string{doc}})
			require.Equal(t, 400, r.Status, string(r.Body))
		})

		t.Run("drafts, direct changes, deploy and versions", func(t *testing.T) {
			w := a.World()
			ag := a.Agent(w.OwnerK, "Sales", map[string]any{"prompt": "Sell widgets."})
			path := fmt.Sprintf("/v1/agents/%d", controltest.ID(ag))

			// Staging changes nothing that calls use and records no version.
			r := a.Do("PATCH", path, w.MembK, map[string]any{"draft_prompt": "Sell gadgets.", "draft_telephony": map[string]any{"endpointing_ms": 800}, "draft_first_message": "Hi there"})
			require.Equal(t, 200, r.Status, string(r.Body))
			got := r.Obj(t)
			require.Equal(t, "Sell widgets.", got["prompt"])
			require.Equal(t, "Sell gadgets.", got["draft_prompt"])
			require.Equal(t, true, got["has_undeployed_changes"])
			tel := got["draft_telephony"].(map[string]any)
			require.Equal(t, float64(800), tel["endpointing_ms"])
			require.Equal(t, "far_field", tel["noise_reduction"], "objects merge")
			require.Equal(t, float64(1), got["version"])

			// A direct change deploys that field (and sets its draft).
			r = a.Do("PATCH", path, w.AdminK, map[string]any{"thinking_level": "high", "name": "Sales EU"})
			require.Equal(t, 200, r.Status, string(r.Body))
			got = r.Obj(t)
			require.Equal(t, "high", got["thinking_level"])
			require.Equal(t, "high", got["draft_thinking_level"])
			require.Equal(t, float64(2), got["version"])
			require.Equal(t, "Sell gadgets.", got["draft_prompt"], "other drafts stay staged")

			// Deploy promotes exactly the staged fields.
			r = a.Do("POST", path+"/deploy", w.MembK, nil)
			require.Equal(t, 200, r.Status, string(r.Body))
			got = r.Obj(t)
			require.Equal(t, "Sell gadgets.", got["prompt"])
			require.Equal(t, "Hi there", got["first_message"])
			require.Equal(t, float64(3), got["version"])
			require.Equal(t, false, got["has_undeployed_changes"])
			// Nothing staged: deploy is a no-op.
			r = a.Do("POST", path+"/deploy", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			require.Equal(t, float64(3), r.Obj(t)["version"])

			r = a.Do("GET", path+"/versions", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			vl := r.Obj(t)
			require.Equal(t, float64(3), vl["count"])
			res := vl["results"].([]any)
			require.Len(t, res, 3)
			v3, v2, v1 := res[0].(map[string]any), res[1].(map[string]any), res[2].(map[string]any)
			require.Equal(t, float64(3), v3["revision"])
			require.Equal(t, []any{"prompt", "first_message", "telephony"}, v3["changed_fields"])
			require.Equal(t, float64(w.MembM.ID), v3["created_by_id"])
			snap := v3["snapshot"].(map[string]any)
			require.Equal(t, "Sell gadgets.", snap["prompt"])
			require.Equal(t, "Sales EU", snap["name"])
			require.NotContains(t, snap, "draft_prompt", "snapshots hold the deployed configuration")
			require.Equal(t, []any{"name", "thinking_level"}, v2["changed_fields"])
			require.Equal(t, float64(w.AdminM.ID), v2["created_by_id"])
			require.Equal(t, "Sell widgets.", v2["snapshot"].(map[string]any)["prompt"])
			require.Contains(t, v1["changed_fields"], "prompt")
			require.Equal(t, float64(w.OwnerM.ID), v1["created_by_id"])

			r = a.Do("GET", path+"/versions?limit=1", w.MembK, nil)
			require.Equal(t, float64(3), r.Obj(t)["count"])
			require.Len(t, r.Obj(t)["results"], 1)
			require.Equal(t, 400, a.Do("GET", path+"/versions?limit=0", w.MembK, nil).Status)
			require.Equal(t, 400, a.Do("GET", path+"/versions?limit=101", w.MembK, nil).Status)

			// A PATCH that changes nothing records nothing.
			r = a.Do("PATCH", path, w.MembK, map[string]any{"prompt": "Sell gadgets."})
			require.Equal(t, float64(3), r.Obj(t)["version"])
			// Invalid changes leave the agent untouched.
			r = a.Do("PATCH", path, w.MembK, map[string]any{"prompt": "ok", "voice": "nope"})
			require.Equal(t, 400, r.Status)
			require.Equal(t, "Sell gadgets.", a.Do("GET", path, w.MembK, nil).Obj(t)["prompt"])
			// Clearing nullable fields and lists with null.
			r = a.Do("PATCH", path, w.MembK, map[string]any{"first_message": nil, "tools": nil})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Nil(t, r.Obj(t)["first_message"])
			require.Equal(t, []any{}, r.Obj(t)["tools"])
		})

		t.Run("org scoping, listing and deletion", func(t *testing.T) {
			w, other := a.World(), a.World()
			first := a.Agent(w.OwnerK, "First", nil)
			second := a.Agent(w.OwnerK, "Second", nil)
			l := a.Do("GET", "/v1/agents", w.MembK, nil).List(t)
			require.Len(t, l, 2)
			require.Equal(t, controltest.ID(second), controltest.ID(l[0]), "newest first")
			require.Empty(t, a.Do("GET", "/v1/agents", other.OwnerK, nil).List(t))
			p := fmt.Sprintf("/v1/agents/%d", controltest.ID(first))
			require.Equal(t, 404, a.Do("GET", p, other.OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("PATCH", p, other.OwnerK, map[string]any{"prompt": "x"}).Status)
			require.Equal(t, 404, a.Do("POST", p+"/deploy", other.OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("GET", p+"/versions", other.OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("DELETE", p, other.OwnerK, nil).Status)
			require.Equal(t, 404, a.Do("GET", "/v1/agents/abc", w.OwnerK, nil).Status)

			// Deleting an agent clears the numbers assigned to it, as versions by the deleter.
			r := a.Do("POST", "/v1/phone-numbers", w.OwnerK, map[string]any{"state": "NY"})
			require.Equal(t, 201, r.Status, string(r.Body))
			num := r.Obj(t)
			np := fmt.Sprintf("/v1/phone-numbers/%d", controltest.ID(num))
			require.Equal(t, 200, a.Do("PATCH", np, w.OwnerK, map[string]any{"inbound_agent_id": controltest.ID(first)}).Status)
			require.Equal(t, 204, a.Do("DELETE", p, w.AdminK, nil).Status)
			require.Equal(t, 404, a.Do("GET", p, w.AdminK, nil).Status)
			require.Nil(t, a.Do("GET", np, w.OwnerK, nil).Obj(t)["inbound_agent_id"])
			v := a.Do("GET", np+"/versions?limit=1", w.OwnerK, nil).Obj(t)["results"].([]any)[0].(map[string]any)
			require.Equal(t, []any{"inbound_agent_id"}, v["changed_fields"])
			require.Equal(t, float64(w.AdminM.ID), v["created_by_id"])
			require.Equal(t, 204, a.Do("DELETE", np, w.OwnerK, nil).Status)
		})

		t.Run("products", func(t *testing.T) {
			w := a.World()
			r := a.Do("GET", "/v1/agent-products", w.MembK, nil)
			require.Equal(t, 200, r.Status)
			l := r.List(t)
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
