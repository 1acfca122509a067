// Package realtime is the realtime WebSocket front door: {ws_url}/v1/realtime,
// one connection = one call (spec sections 4.14 and 6.3), speaking OpenAI's
// Realtime event model so its published clients work unmodified.
//
// # Connecting
//
// The credential is an API key (Authorization: Bearer, the api_key query
// parameter, or the browsers' openai-insecure-api-key.<key> subprotocol) or a
// session token from POST /v1/realtime/sessions (TokenPrefix). With a key and
// agent_id the saved agent's call is admitted before the upgrade and starts at
// once; with a key alone the call is inline and starts at the first
// session.update that configures something (an update of tracing alone, which
// the agents SDK sends on session.created, does not count). Client events sent
// before that are buffered and replayed in order. Refusals before the upgrade
// are HTTP errors: 401, 402 (balance), 404 (agent), 429 (per-organization
// session cap).
//
// # Dialects
//
// GA event names (response.output_audio.delta, conversation.item.added) by
// default; beta names (response.audio.delta, conversation.item.created) when
// the client sends OpenAI-Beta: realtime=v1 or configures the session with
// beta fields (modalities, input_audio_format). Both nested (audio.input.format)
// and flat session fields are read; unknown fields are ignored. Formats: PCM16
// at 16 kHz (audio/pcm, the spec's default) or 24 kHz (pcm16, or rate 24000),
// G.711 µ-law and A-law at 8 kHz. Formats and agent configuration are fixed
// once the call is live: changing them is an error event
// (session_config_immutable), not a disconnect; turn_detection, tracing and
// binary_output may change. With binary_output the agent's audio comes as
// binary frames of raw audio instead of base64 deltas; binary client frames
// are taken as raw input audio.
//
// # Goroutines and limits
//
// The upgrading handler goroutine reads the socket and is the engine's input
// goroutine; a writer goroutine owns all writes; a logger goroutine writes the
// call log; the node's pacer moves one agent frame per 20 ms from the engine
// to the writer's queue without blocking. Messages over MaxMessageBytes close
// with 1009; a client that reads too slowly (a second of audio or
// MaxQueuedBytes of events waiting) is closed with 1008 "slow consumer"; one
// that sends nothing for twice PingInterval (pongs count) is dropped; one
// idle for IdleTimeout is closed.
package realtime
