// Package tts turns text into speech, streamed: the agent's "speak" step.
//
// A Synthesizer takes a Request (text, voice, language, output rate) and
// returns Audio, PCM16 mono samples at the requested rate that can be read
// as soon as the provider produces them, before the whole text is
// synthesized. Closing the Audio stops the synthesis.
//
// Providers:
//   - package espeak (ai/tts/espeak): espeak-ng through libespeak-ng, the
//     offline default that needs no key.
//   - OpenAI: the OpenAI speech protocol (POST {base}/audio/speech with
//     response_format "pcm") through openai-go, which OpenAI and compatible
//     local servers implement.
//
// Providers produce audio at their native rate (espeak-ng 22050 Hz, OpenAI
// 24000 Hz) and convert it to Request.SampleRate once, with package
// codecs/resample (Resample), aligned so that the first sample out is the
// provider's first sample.
//
// Audio belongs to one goroutine (Read is not safe for concurrent use);
// Close may be called from any goroutine and more than once. Providers are
// safe for concurrent use.
package tts
