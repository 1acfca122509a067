// Package agent is the conversation engine: one Session per call listens
// to the caller, decides when a turn ends, asks the model, speaks the
// answer sentence by sentence, and stops the instant it is interrupted.
// Transports (the realtime WebSocket, SIP/RTP, WebRTC) feed it caller audio
// and client requests and carry its audio and events out; it knows nothing
// of wire formats.
//
// # Conversation model
//
// The session keeps the realtime API's model: a list of items (messages,
// function calls and their outputs) and at most one active response, which
// produces an assistant message (spoken or written) and function calls.
// Its Events mirror the API's server events in neutral form; the realtime
// transport spells them out. Refused client requests come back as Error
// events, never as a broken session.
//
// # Goroutines
//
//   - The loop goroutine (started by New) owns the conversation. Client
//     requests (CreateItem, CreateResponse, ...) are queued to it and
//     every Event is emitted from it, in order.
//   - The input goroutine is the transport's receive loop: WriteFrame,
//     CommitInput, ClearInput and SetTurnDetection run on it. It records
//     the caller, cancels the agent's echo, detects speech and turns
//     (media/turn) and buffers the turn's audio, and on a barge-in pauses
//     the agent's playout itself, so audio stops at the next frame
//     whatever the loop is doing.
//   - The pacer goroutine calls ReadFrame once per 20 ms tick: it takes a
//     frame from the current Playout without locks or allocation.
//   - Per response, a generator goroutine streams the model's answer
//     through a sentence chunker, and a speaker goroutine synthesizes each
//     sentence into the playout as soon as it is complete; a placeholder
//     phrase fills a slow first sentence. One STT worker transcribes
//     committed turns in order.
//
// # Interruptions
//
// Caller frames the agent's own playout explains are no speech to turn
// detection: the input side estimates the echo path's delay from the
// audio it played, gives it to the echo canceller, and gates frames no
// louder than the echo that audio predicts (echo.go), so the agent's
// echo never barges in.
//
// When the caller starts speaking over the agent (60 ms of speech that
// the echo does not explain and that stands out of the noise), the input
// goroutine pauses the playout (bargein.go): the pacer's next frame fades
// it to silence within 5 ms and consumes nothing, so the count of samples
// played is final (PlayoutPaused). The turn detector then decides with the
// agent counted as talking: no barge-in (a backchannel, a cough, a door)
// resumes the playout where it paused, fading back in (PlayoutResumed);
// a barge-in (turn.SpeechStarted with Interrupt, and InterruptResponse
// set) keeps it paused until the interrupting turn's transcript arrives:
// an empty one (a cough, a false interruption) resumes the playout where
// it stopped; words cancel the response (status cancelled, reason
// turn_detected) and cut the assistant item to the audio actually played:
// its AudioMS is what left through ReadFrame and its transcript the
// sentences (and the share of words of a sentence) that audio held.
//
// # Automatic behaviours
//
// Saved agents may speak first (a fixed first message or an answer to the
// prompt), check in after silence and end the call when check-ins go
// unanswered, and end it at MaxDuration; inline realtime sessions do none
// of this (spec 4.14). The built-in end_call tool ends the call once the
// agent finished speaking. Loopback sessions play each caller turn back
// with no STT, model or TTS, for load tests of the media path.
//
// # Transcript and recording
//
// Turn, ToolCalled and ToolResult events are the call's transcript and
// history, with wall-clock times, and DTMF events the keys heard in the
// caller's audio (Config.InbandDTMF); RecordPath records both legs to a
// stereo WAV in the caller's clock.
package agent
