// Package pcm converts 16-bit linear PCM between its wire form
// (little-endian bytes, as in WAV files, raw sockets and the realtime
// WebSocket), []int16 samples and []float32 samples.
//
// Float samples use the scale of 32768: int16 s becomes float32(s)/32768 in
// [-1, 1), and a float32 f becomes f*32768 rounded to the nearest integer
// (halves rounded up), saturating at -32768 and 32767, with NaN mapped to 0. Every int16 survives the round trip through float32 exactly.
//
// All functions write into caller-owned buffers, convert as many samples as
// both slices allow, return that count, never allocate and are safe for
// concurrent use on distinct buffers.
package pcm
