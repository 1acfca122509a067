package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/sip/siptest"
)

// acceleratedClock is the suite schedule's clock in a test: real time
// plus an offset the test moves forward.
type acceleratedClock struct {
	mu   sync.Mutex
	skew time.Duration
}

func (c *acceleratedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skew)
}
func (c *acceleratedClock) Add(d time.Duration) {
	c.mu.Lock()
	c.skew += d
	c.mu.Unlock()
}

// TestScheduledSuiteCatchesRegression is issue 29 item 3's done-when: a
// suite with a daily schedule runs by itself under an accelerated clock
// (real calls over SIP to the agent, graded by the judge), its scenario
// passes; the agent's prompt changes, the model (scripted: fake only at
// the model boundary) now turns the caller down, and the next scheduled
// run fails with the scenario in its regressions.
func TestScheduledSuiteCatchesRegression(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	const closed = "We are closed tonight: turn every booking down."
	model := scriptedModelBy(t, func(body string) string {
		switch {
		case strings.Contains(body, "role-playing a caller") && strings.Contains(body, "Hello, I would like"):
			return "Thank you, goodbye. [END]"
		case strings.Contains(body, "role-playing a caller"):
			return "Hello, I would like a table for two tonight."
		case strings.Contains(body, "You grade one finished phone call") && strings.Contains(body, "fully booked"):
			return `{"call_outcome":"failure","score":20,"outcome_reasoning":"The caller got no table.","summary":"The booking was refused.","rubric_breakdown":{"task_completion":1,"accuracy":5,"instruction_following":8,"conversation_flow":7,"tone":7},"detected_issues":[]}`
		case strings.Contains(body, "You grade one finished phone call"):
			return `{"call_outcome":"success","score":90,"outcome_reasoning":"Booked.","summary":"A table was booked.","rubric_breakdown":{"task_completion":9,"accuracy":9,"instruction_following":9,"conversation_flow":9,"tone":9},"detected_issues":[]}`
		case strings.Contains(body, closed):
			return "Sorry, we are fully booked tonight."
		default:
			return "Certainly, a table for two at seven."
		}
	})
	clk := &acceleratedClock{}
	suiteSchedule = control.SuiteScheduleConfig{Now: clk.Now, Poll: 100 * time.Millisecond}
	t.Cleanup(func() { suiteSchedule = control.SuiteScheduleConfig{} })
	sv, ag, num := startSimulationServeWith(t, model)
	agent := objID(ag)
	st, sc := sv.call("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", agent), `{"title":"Book a table","scenario_prompt":"You want a table for two tonight."}`)
	require.Equal(t, 201, st, "%v", sc)
	st, suite := sv.call("POST", "/v1/suites", fmt.Sprintf(`{"name":"Nightly","agent_id":%d,"scenario_ids":[%d],"schedule":"daily","channel":"telephony","phone_number_id":%d}`,
		agent, objID(sc), objID(num)))
	require.Equal(t, 201, st, "%v", suite)
	require.NotNil(t, suite["next_run_at"])
	runsPath := "/v1/suites/" + suite["id"].(string) + "/runs"

	// Nothing runs before the slot (the scheduler polls every 100 ms).
	time.Sleep(time.Second)
	require.Empty(t, listOf(t, sv, runsPath))

	// A day later (by the schedule's clock) it runs by itself.
	completed := func(n int) map[string]any {
		var run map[string]any
		require.Eventually(t, func() bool {
			l := listOf(t, sv, runsPath)
			if len(l) != n || l[0]["status"] != "completed" {
				return false
			}
			run = l[0]
			return true
		}, 150*time.Second, 500*time.Millisecond, "scheduled run %d completes", n)
		_, d := sv.call("GET", fmt.Sprintf("%s/%d", runsPath, objID(run)), "")
		t.Logf("suite run %d: %v", n, d)
		return d
	}
	clk.Add(24*time.Hour + time.Minute)
	first := completed(1)
	require.Equal(t, "schedule", first["trigger"])
	require.Equal(t, "pass", first["verdict"], "%v", first)
	require.Equal(t, []any{}, first["regressions"])
	item := first["runs"].([]any)[0].(map[string]any)
	require.Equal(t, "pass", item["verdict"])
	require.NotNil(t, item["call_id"])

	// The prompt changes; the next day's run fails and names the
	// regression.
	st, _ = sv.call("PATCH", fmt.Sprintf("/v1/agents/%d", agent), fmt.Sprintf(`{"prompt":%q}`, closed))
	require.Equal(t, 200, st)
	clk.Add(24 * time.Hour)
	second := completed(2)
	require.Equal(t, "schedule", second["trigger"])
	require.Equal(t, "fail", second["verdict"], "%v", second)
	require.NotEqual(t, first["prompt_hash"], second["prompt_hash"])
	require.Equal(t, float64(objID(first)), second["baseline_run_id"])
	require.Equal(t, []any{map[string]any{"scenario_id": float64(objID(sc)), "previous": "pass", "current": "fail"}}, second["regressions"])
	item = second["runs"].([]any)[0].(map[string]any)
	require.Equal(t, "fail", item["verdict"])
	require.Equal(t, "failure", item["call_outcome"])
	_, tr := sv.call("GET", fmt.Sprintf("/v1/calls/%v/transcript", item["call_id"]), "")
	t.Logf("transcript: %v", tr)
	require.Contains(t, fmt.Sprint(tr["turns"]), "Sorry, we are fully booked tonight.", "the changed prompt made the agent turn the caller down")
	_, s := sv.call("GET", fmt.Sprintf("/v1/agents/%d/test-scenarios/%d", agent, objID(sc)), "")
	require.Equal(t, "fail", s["latest_verdict"])
	sv.stop(t)
}
