// Package mp3 encodes 16-bit PCM to MPEG-1/2/2.5 Layer III (audio/mpeg)
// through libmp3lame, for call recording previews and downloads.
//
// The encoder is constant bit rate with no ID3 tags and no Xing/Info frame,
// so its output is a plain sequence of MP3 frames that can be streamed as it
// is produced (an HTTP response, a chunked upload) and concatenated. The
// sample rate must be one MPEG Layer III carries directly (8000, 11025,
// 12000, 16000, 22050, 24000, 32000, 44100 or 48000 Hz): LAME never
// resamples, so the output rate is the input rate. Decoders see the usual
// encoder delay of LAME (576 samples plus the decoder delay of 529) of
// leading silence, and the last frame is padded with silence.
//
// Building needs libmp3lame (Debian: libmp3lame-dev) and cgo.
package mp3
