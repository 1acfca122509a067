// Package dsp conditions a call's inbound audio before turn-taking and STT:
// acoustic echo cancellation against what the agent is playing, noise
// suppression, automatic gain control, and voice activity detection.
//
// A Processor wraps the WebRTC audio processing module (APM) from
// libwebrtc-audio-processing 0.3 (Debian libwebrtc-audio-processing-dev)
// through a small C shim (apm.h, apm.cc). The APM works on 10 ms chunks;
// ProcessNear and ProcessFar take whole frames (normally 20 ms) and loop over
// the chunks inside one cgo call. Frames are processed in place, nothing is
// allocated per frame, and with only voice detection configured no cgo call
// is made at all.
//
// Per call, on the media path:
//
//	p, err := dsp.New(dsp.Config{NoiseReduction: dsp.NearField, EchoCancellation: true, EchoDelay: 120 * time.Millisecond})
//	...
//	p.ProcessFar(agentFrame)            // the 20 ms the agent just sent, at the same rate
//	res, err := p.ProcessNear(callerFrame) // cleaned in place; res.Speech, res.Probability
//
// Noise reduction follows the API's noise_reduction types: NearField is the
// APM's moderate level, FarField its very high level. Measured on espeak-ng
// speech in 10 dB SNR white or pink noise, NearField removes about 12 dB of
// noise and FarField about 20 dB, changing speech-frame power by 1-2 dB.
//
// Echo cancellation uses the APM's AEC with the 128 ms extended filter and
// the reported delay (Config.EchoDelay, adjustable with SetEchoDelay); it
// cancels echoes from about 20 ms before to 100 ms after that delay, for
// delays up to MaxEchoDelay. On a synthetic echo path (-10 dB, short room
// response) it removes about 42 dB of echo after the first utterance, and
// near-end speech over the echo (double talk) loses about 5 dB.
//
// Speech detection is the package's own VAD (VAD, usable alone), run on the
// processed frame: the APM's detector answers only yes/no and was measured
// to flag 27% of non-speech frames in 5 dB SNR pink noise even after noise
// suppression (and all of them without it), where VAD flags none. The
// APM's detector can still be enabled for comparison
// (Config.APMVoiceDetection, Result.APMVoice).
package dsp
