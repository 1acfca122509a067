// Package media is the core of the media engine: the PCM frame every stage
// exchanges and the small sample operations between stages (mixing, gain,
// level, buffering). Transports, codecs, DSP and the conversation engine
// live in subpackages and in codecs/, and agree on the contract below.
//
// # PCM conventions (DESIGN.md section 4)
//
//   - Samples are signed 16-bit linear PCM, mono, as []int16 in memory and
//     little-endian on the wire. Stereo exists only at the edges
//     (recordings: caller left, agent right) and is interleaved there.
//   - A frame is 20 ms: SamplesPerFrame(rate) samples, 50 frames a second.
//   - Rates are int Hz, one of 8000 (G.711), 16000 (analysis: VAD,
//     turn-taking, STT; WebSocket PCM), 24000 (WebSocket PCM, TTS) or 48000
//     (Opus). Anything else is rejected with ErrUnsupportedRate where a
//     rate enters the engine. Audio is resampled once per direction, never
//     twice.
//   - The steady state allocates nothing per frame or per packet: buffers
//     are owned by the caller (the EncodeTo(dst, src) shape; functions here
//     write into dst and return how many samples they wrote) and per-stream
//     scratch only grows.
//   - A function that takes a frame does not keep it after returning unless
//     its documentation says so; the caller may reuse the buffer at once.
//   - Full scale is 32768: dBFS figures are relative to a full-scale square
//     wave (RMS 32768), as in SoX, so a full-scale sine reads -3.01 dBFS.
//
// # Concurrency
//
// The functions are pure and safe for concurrent use on distinct buffers.
// A Ring connects exactly one producer goroutine to one consumer goroutine
// without locks; see its documentation.
package media
