// Package turn decides when a caller starts and stops talking: the
// turn-taking half of a conversation, with the semantics of OpenAI's
// realtime turn_detection.
//
// A Detector is fed one decision per 20 ms frame: the speech probability
// of the caller's frame (from dsp after echo cancellation, so the agent's
// own voice scores low) and whether the agent was playing audio during it.
// Time is the frame count, so the detector is deterministic and needs no
// clock; callers convert frames to milliseconds with FrameMS.
//
// # server_vad
//
// A frame is speech when its probability is at least Threshold. A turn
// starts when enough speech has been heard recently: MinSpeech of speech
// frames within the last 2×MinSpeech while the agent is silent, so a click
// or a cough is not a turn. The reported start reaches back PrefixPadding
// before the first speech frame (but never before the end of the previous
// turn), the audio OpenAI's server_vad keeps as prefix_padding_ms. A turn
// stops after SilenceDuration without speech (silence_duration_ms); the
// reported end is the frame after the last speech frame.
//
// # Barge-in and backchannels
//
// While the agent talks the bar is higher: InterruptSpeech of speech
// frames within the last InterruptWindow. Short acknowledgements ("uh-huh",
// "okay", "yes": about 0.45-0.6 s of voiced frames when spoken by
// espeak-ng) stay under it and are reported as Backchannel events when
// they end, without interrupting. Residual echo stays far under the bar
// once the echo canceller has converged; before that (the agent's first
// EchoWarmup of audio, 2 s by default) it can look like a backchannel and
// come within 10% of the bar, so the bar is raised by half meanwhile.
// Reaching the bar reports SpeechStarted with Interrupt set: the barge-in
// decision. What to do when the interrupting turn turns out to hold no
// words (a false interruption) is the conversation engine's call; the
// detector only reports timing.
//
// # semantic_vad
//
// The silence that ends a turn depends on what the caller has said so
// far and how their voice ended it: the conversation engine classifies
// the partial transcript of the turn in progress with the intonation of
// its last voiced frames (EndOf, Intonation) and gives the detector the
// result (Detector.SetHint). Words that end mid-phrase ("I want to book
// a", a trailing conjunction, preposition, article or "um") hold the turn
// open longest; words that can end a sentence said with a level or rising
// voice (a caller pausing mid-sentence) hold it a while; words that can
// end said with a falling voice, or a question, end it soonest; no words
// yet, or a voice that does not tell, wait in between (SemanticSilence:
// final / complete / unknown / hold / mid-phrase, eagerness high 200 /
// 200 / 400 / 500 / 800 ms, medium and auto 250 / 450 / 500 / 800 / 1200
// ms, low 500 / 700 / 1000 / 1400 / 2000 ms).
//
// # Idle timeout
//
// With IdleTimeout set, IdleTimeout is reported once when neither the
// caller nor the agent has made a sound for that long (idle_timeout_ms);
// it re-arms at the next speech or agent audio.
//
// A Detector is for one stream and one goroutine; Process allocates
// nothing.
package turn
