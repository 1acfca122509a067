package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
)

// TestInboundSimulationAgentCallsTheCaller: a run with direction inbound
// and a test run of a scenario with direction outbound both have the
// agent place a real outbound call (the node's SIP stack, over loopback)
// to the simulated caller's user agent, which answers and plays the
// scenario. Each run takes its call (outbound, is_simulation, from the
// agent's number), transcript, recording, duration and grade from it;
// the test run's run gets its verdict.
func TestInboundSimulationAgentCallsTheCaller(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	sv, ag, num := startSimulationServe(t)

	st, run := sv.call("POST", "/v1/simulations", fmt.Sprintf(`{"target_type":"phone_number","target_id":%d,"direction":"inbound","scenario_prompt":"You want a table for two tonight.","consent_to_charge":true}`, objID(num)))
	require.Equal(t, 201, st, "%v", run)
	require.Equal(t, "inbound", run["direction"])
	require.Equal(t, "queued", run["status"])
	// The scenario's outbound is the agent calling: an inbound run.
	st, sc := sv.call("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", objID(ag)),
		`{"title":"Call back about the booking","scenario_prompt":"You want a table for two tonight.","direction":"outbound"}`)
	require.Equal(t, 201, st, "%v", sc)
	st, tr := sv.call("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", objID(ag)), fmt.Sprintf(`{"channel":"telephony","phone_number_id":%d,"scenario_ids":[%d],"consent_to_charge":true}`, objID(num), objID(sc)))
	require.Equal(t, 201, st, "%v", tr)

	var done map[string]any
	require.Eventually(t, func() bool {
		_, done = sv.call("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", objID(ag), objID(tr)), "")
		return done["status"] == "completed"
	}, 150*time.Second, 500*time.Millisecond, "the test run ends")
	var sims []map[string]any
	require.Eventually(t, func() bool {
		sims = nil
		for _, r := range listOf(t, sv, "/v1/simulations?limit=10") {
			if (r["status"] == "completed" || r["status"] == "failed") && r["grade"] != nil {
				sims = append(sims, r)
			}
		}
		return len(sims) == 2
	}, 90*time.Second, 250*time.Millisecond, "both runs end and are graded")
	calls := map[any]bool{}
	for _, r := range sims {
		t.Logf("run %v: status %v, call %v, %v s, metadata %v", r["id"], r["status"], r["call_id"], r["duration_seconds"], r["metadata"])
		require.Equal(t, "completed", r["status"], "%v", r)
		require.Equal(t, "inbound", r["direction"])
		require.Greater(t, r["duration_seconds"].(float64), 0.0)
		require.Contains(t, r["recording_url"], "/recording?expires=")
		require.Equal(t, "completed", r["grade"].(map[string]any)["status"])
		meta := r["metadata"].(map[string]any)
		require.Equal(t, "telephony", meta["channel"])
		require.Equal(t, "inbound", meta["direction"])
		var said []string
		for _, it := range r["transcript"].([]any) {
			m := it.(map[string]any)
			said = append(said, m["role"].(string)+": "+m["content"].(string))
		}
		t.Logf("transcript: %v", said)
		// Outbound calls are user_first by default: the simulated caller
		// speaks first (after waiting for a greeting that does not come).
		require.NotEmpty(t, said)
		require.Equal(t, "user: Hello, I would like a table for two tonight.", said[0])
		require.Contains(t, said, "assistant: Certainly, a table for two at seven.", "the agent answered the simulated caller")
		_, c := sv.call("GET", fmt.Sprintf("/v1/calls/%v", r["call_id"]), "")
		t.Logf("call: end %v billed %v grade %v %v", c["end_time"], c["billed_at"], c["grade_status"], r["grade"])
		require.Equal(t, "outbound", c["direction"], "the agent placed the call: %v", c)
		require.Equal(t, true, c["is_simulation"])
		require.Equal(t, "+14155550100", c["from_number"])
		require.True(t, strings.HasPrefix(c["to_number"].(string), "+1555"), "%v", c["to_number"])
		require.Equal(t, "completed", c["status"])
		require.Equal(t, c["duration_seconds"], r["duration_seconds"])
		calls[r["call_id"]] = true
	}
	require.Len(t, calls, 2)
	item := done["runs"].([]any)[0].(map[string]any)
	t.Logf("test run: %v", done)
	require.Equal(t, "pass", item["verdict"], "%v", item)
	require.Equal(t, "success", item["call_outcome"])

	sv.stop(t)
}
