// Package call is the live call behind every front door: SIP/RTP
// (Phone), WebRTC (Browser) and the realtime WebSocket (Realtime).
//
// What is above the transport is written once here, for all three:
//
//   - admission, through the control plane's Admitter;
//   - the one mapping from an agent's configuration (deployed, draft or
//     inline) to the engine's (engineConfig), with the per-channel
//     differences in one table (channels);
//   - the tool chain (Chain): one agent.ToolRunner made of tool sources
//     (Source), resolved once at call start — the webhook exchange
//     (WebhookTools), transfer_call (Transfers) and send_dtmf (Keypad)
//     today; a knowledge or MCP source is one more Source. end_call stays
//     the engine's own (it ends the call after the goodbye plays), and an
//     inline realtime session's tools are its client's;
//   - the call's record: transcript turns, tool calls and results, DTMF,
//     machine detection, quality and the recording, and its finish
//     (record);
//   - voicemail screening and the two-leg bridge of phone calls.
//
// Node ties the three doors together for a process: NewNode starts the
// phone and browser doors, Connect wires the control plane and starts the
// realtime door, Drain and Close end the calls.
//
// The package reaches the control plane only through the small
// interfaces of control.go (Control), implemented in process by
// control.CallLog and control/webhook.Exchanger; it never imports
// storage, so a media node runs without a database.
//
// The per-packet path (callerSink and agentSource on the node's pacer)
// allocates nothing and takes no lock: it is the media engine's, moved
// here unchanged.
package call
