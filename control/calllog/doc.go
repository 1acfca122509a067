// Package calllog is the control plane's side of a live call's record:
// admission (inbound, test, web, inline realtime configurations and
// outbound calls placed with POST /v1/call), the events the call appends,
// its end and its billing at the agent's product, and the call's tool
// webhook events. The live call (package call) reaches it through its own
// small interfaces (Admitter, Recorder, Finisher, TrunkLookup); control
// serves it in process. Package calls owns the stored form of the events
// and the read routes of the call log.
//
// Log is generic over the agent configuration C (control.AgentConfig),
// which it reads through Schema, the way control/agents is.
package calllog
