// Package wav reads and writes RIFF/WAVE files holding 16-bit PCM
// (format 1), A-law (format 6) or µ-law (format 7) audio, mono or stereo,
// at any sample rate: call recordings, uploaded prompts and test fixtures.
//
// # Reading
//
// NewReader parses the RIFF header from an io.Reader up to the start of the
// data chunk, skipping chunks it does not need (LIST, fact, cue, ...) and
// their pad bytes, and accepts WAVE_FORMAT_EXTENSIBLE when its sub-format
// is one of the three encodings. Malformed headers return errors wrapping
// the sentinels in errors.go, each naming what is wrong. The reader never
// allocates from a size declared in the file: chunks are skipped by
// streaming and samples are read through a fixed scratch buffer, so a
// hostile header cannot make it reserve memory. A data size of 0xFFFFFFFF
// means "until end of input", as streaming writers emit; any other declared
// size that the input does not reach is reported as ErrTruncated after the
// samples that were present.
//
// # Writing
//
// Writer streams samples to an io.WriteSeeker and patches the RIFF, fact
// and data sizes on Close. Encode builds a complete file in memory and
// AppendHeader writes a header for a known data length, for output that
// cannot seek (HTTP responses). G.711 files carry an 18-byte fmt chunk and
// a fact chunk, as the WAVE specification asks for non-PCM formats.
//
// Samples are interleaved int16 in both directions; G.711 data is decoded
// and encoded with package g711, so WAV files and RTP agree bit for bit.
//
// Reader and Writer are not safe for concurrent use.
package wav
