// Package scenarios serves test scenarios, suites and test-run reads
// (spec 2.12, 4.8): scenario CRUD with every nested default and limit;
// generate, refresh and promote-to-scenario, which ask the chat model
// (Model, an llm.Provider) for strict JSON, clamp what it writes to the
// limits and save nothing when it fails (502); suites of one agent's
// scenarios with their pass rule and schedule; and the agent's test runs
// as stored by the runner. It declares the stores it consumes (Store,
// SuiteStore, RunStore, Agents, Calls, Numbers); docs/decisions.md, "Test
// scenarios, suites and test runs", records the choices the spec leaves
// open.
package scenarios
