// Package stt transcribes speech: the agent's "hear" step, run on each
// segment the voice activity detector cuts from the caller's audio.
//
// A Transcriber takes a Request (one segment of 16 kHz PCM16 mono, the
// analysis rate of DESIGN.md section 4, with an optional language and
// prompt) and returns a Result: the text and, when the engine reports one,
// a confidence.
//
// Providers:
//   - package pocketsphinx (ai/stt/pocketsphinx): CMU PocketSphinx through
//     libpocketsphinx, the offline default that needs no key.
//   - OpenAI: the OpenAI transcription protocol (multipart POST
//     {base}/audio/transcriptions with a WAV file) through openai-go, which
//     OpenAI and compatible servers (faster-whisper, whisper.cpp, vLLM)
//     implement.
//
// Providers are safe for concurrent use.
package stt
