package wav

import "errors"

// Errors returned by the reader and writer, wrapped with details such as
// the offending value. Test with errors.Is.
var (
	// ErrNotRIFF reports input that does not start with the "RIFF" magic
	// (RF64 and big-endian RIFX files are not supported).
	ErrNotRIFF = errors.New("wav: not a RIFF file")
	// ErrNotWAVE reports a RIFF file whose form type is not "WAVE".
	ErrNotWAVE = errors.New("wav: RIFF form is not WAVE")
	// ErrMissingFmt reports a data chunk, or the end of input, before any
	// fmt chunk.
	ErrMissingFmt = errors.New("wav: missing fmt chunk")
	// ErrMissingData reports input that ends without a data chunk.
	ErrMissingData = errors.New("wav: missing data chunk")
	// ErrFmtChunk reports a fmt chunk too short for its format.
	ErrFmtChunk = errors.New("wav: malformed fmt chunk")
	// ErrUnsupportedFormat reports a format code other than PCM (1), A-law
	// (6) or µ-law (7), directly or as an extensible sub-format.
	ErrUnsupportedFormat = errors.New("wav: unsupported format code")
	// ErrBitsPerSample reports a sample size that does not match the
	// format: PCM must be 16-bit, G.711 8-bit.
	ErrBitsPerSample = errors.New("wav: unsupported bits per sample")
	// ErrBlockAlign reports a block alignment other than channels times
	// bytes per sample.
	ErrBlockAlign = errors.New("wav: block align does not match channels and sample size")
	// ErrZeroChannels reports a channel count of zero.
	ErrZeroChannels = errors.New("wav: zero channels")
	// ErrChannels reports a channel count other than 1 or 2.
	ErrChannels = errors.New("wav: unsupported channel count")
	// ErrZeroSampleRate reports a sample rate of zero.
	ErrZeroSampleRate = errors.New("wav: zero sample rate")
	// ErrSampleRate reports a negative sample rate, or one whose byte rate
	// does not fit the header's 32-bit field.
	ErrSampleRate = errors.New("wav: sample rate out of range")
	// ErrChunkSize reports a chunk that claims to extend past the end of
	// the RIFF container or of the input.
	ErrChunkSize = errors.New("wav: chunk size beyond end of file")
	// ErrTruncated reports input that ends inside a header or before the
	// end of the data the header declares.
	ErrTruncated = errors.New("wav: truncated")
	// ErrPartialFrame reports samples or data bytes that are not a whole
	// number of frames (one sample per channel).
	ErrPartialFrame = errors.New("wav: partial sample frame")
	// ErrTooLarge reports data that would push the file past the 4 GiB
	// limit of RIFF sizes.
	ErrTooLarge = errors.New("wav: data exceeds the 4 GiB RIFF limit")
	// ErrClosed reports a write to a closed Writer.
	ErrClosed = errors.New("wav: writer closed")
)
