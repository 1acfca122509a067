package wav

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
)

// unknownSize is the chunk or RIFF size streaming writers put in a header
// they cannot come back to patch.
const unknownSize = 0xFFFFFFFF

// maxFmtRead is how much of a fmt chunk is kept: the 40 bytes of
// WAVE_FORMAT_EXTENSIBLE. The rest of a longer chunk is skipped.
const maxFmtRead = 40

// Reader reads the samples of a WAV file from an io.Reader. Its memory is
// fixed at construction whatever the file declares.
type Reader struct {
	r      io.Reader
	format Format
	// dataLen is the declared size of the data chunk, or -1 when it runs to
	// the end of input; remaining counts what is left of it.
	dataLen   int64
	remaining int64
	err       error // sticky: once reading fails or ends, it stays so
	buf       [4096]byte
}

// NewReader parses the header of the WAV file in r, reading exactly up to
// the first byte of sample data. Errors wrap the package's sentinels
// (ErrNotRIFF, ErrMissingFmt, ErrUnsupportedFormat, ...) or the reader's
// own error.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: r}
	if err := rd.parseHeader(); err != nil {
		return nil, err
	}
	return rd, nil
}

// Format returns the format of the file.
func (r *Reader) Format() Format {
	return r.format
}

// DataLen returns the size in bytes of the data chunk as declared by the
// header, or -1 when the header leaves it open (data runs to end of input).
func (r *Reader) DataLen() int64 {
	return r.dataLen
}

// Frames returns the number of whole frames (one sample per channel) the
// header declares, or -1 when the length is open.
func (r *Reader) Frames() int64 {
	if r.dataLen < 0 {
		return -1
	}
	return r.dataLen / int64(r.format.BlockAlign())
}

func (r *Reader) parseHeader() error {
	b := r.buf[:12]
	n, err := io.ReadFull(r.r, b)
	switch {
	case n >= 4 && string(b[:4]) != "RIFF":
		return fmt.Errorf("file starts with %q: %w", b[:4], ErrNotRIFF)
	case n < 4 && !bytes.HasPrefix([]byte("RIFF"), b[:n]):
		return fmt.Errorf("file starts with %q: %w", b[:n], ErrNotRIFF)
	case err != nil:
		return headerReadError("RIFF header", err)
	case string(b[8:12]) != "WAVE":
		return fmt.Errorf("form type %q: %w", b[8:12], ErrNotWAVE)
	}
	// end is the offset just past the RIFF container, or -1 if unknown.
	end := int64(-1)
	if size := binary.LittleEndian.Uint32(b[4:]); size != 0 && size != unknownSize {
		end = 8 + int64(size)
	}
	pos := int64(12)
	haveFmt := false
	for {
		h := r.buf[:8]
		n, err := io.ReadFull(r.r, h)
		if n == 0 && err == io.EOF {
			if !haveFmt {
				return fmt.Errorf("end of file at offset %d: %w", pos, ErrMissingFmt)
			}
			return fmt.Errorf("end of file at offset %d: %w", pos, ErrMissingData)
		}
		if err != nil {
			return headerReadError(fmt.Sprintf("chunk header at offset %d", pos), err)
		}
		id, size := string(h[:4]), int64(binary.LittleEndian.Uint32(h[4:]))
		pos += 8
		if id == "data" {
			if !haveFmt {
				return fmt.Errorf("data chunk at offset %d: %w", pos-8, ErrMissingFmt)
			}
			if size == unknownSize {
				r.dataLen, r.remaining = -1, -1
				return nil
			}
			// One byte of slack: writers often leave the pad byte of an
			// odd data chunk out of the RIFF size.
			if end >= 0 && pos+size > end+1 {
				return chunkBeyondRIFF(id, pos-8, size, end)
			}
			r.dataLen, r.remaining = size, size
			return nil
		}
		if end >= 0 && pos+size > end+1 {
			return chunkBeyondRIFF(id, pos-8, size, end)
		}
		skip := size + size&1
		if id == "fmt " && !haveFmt {
			if size < 16 {
				return fmt.Errorf("fmt chunk of %d bytes, want at least 16: %w", size, ErrFmtChunk)
			}
			k := min(size, maxFmtRead)
			if _, err := io.ReadFull(r.r, r.buf[:k]); err != nil {
				return chunkReadError(id, pos-8, size, err)
			}
			if err := r.parseFmt(r.buf[:k]); err != nil {
				return err
			}
			haveFmt = true
			skip -= k
			pos += k
		}
		if skip > 0 {
			got, err := io.CopyN(io.Discard, r.r, skip)
			if err != nil {
				// A missing pad byte after the last chunk is harmless,
				// but then no data chunk can follow.
				return chunkReadError(id, pos-8, size, err)
			}
			pos += got
		}
	}
}

// parseFmt validates a fmt chunk (its first 16 to 40 bytes) into r.format.
func (r *Reader) parseFmt(b []byte) error {
	le := binary.LittleEndian
	code := le.Uint16(b[0:])
	channels := int(le.Uint16(b[2:]))
	rate := int64(le.Uint32(b[4:]))
	block := int(le.Uint16(b[12:]))
	bits := int(le.Uint16(b[14:]))
	if code == formatExtensible {
		if len(b) < maxFmtRead || le.Uint16(b[16:]) < 22 {
			return fmt.Errorf("WAVE_FORMAT_EXTENSIBLE fmt chunk of %d bytes, want 40: %w", len(b), ErrFmtChunk)
		}
		sub := b[24:40]
		if !bytes.Equal(sub[2:], guidTail[:]) {
			return fmt.Errorf("extensible sub-format GUID % X: %w", sub, ErrUnsupportedFormat)
		}
		code = le.Uint16(sub)
	}
	enc := Encoding(code)
	if enc.BytesPerSample() == 0 {
		return fmt.Errorf("format code 0x%04X: %w", code, ErrUnsupportedFormat)
	}
	f := Format{Encoding: enc, Channels: channels, SampleRate: int(rate)}
	if rate > 1<<31-1 {
		f.SampleRate = -1 // reported as out of range on 32-bit int too
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if want := 8 * enc.BytesPerSample(); bits != want {
		return fmt.Errorf("%d bits per sample for %s, want %d: %w", bits, enc, want, ErrBitsPerSample)
	}
	if block != f.BlockAlign() {
		return fmt.Errorf("block align %d for %d channels of %s, want %d: %w", block, channels, enc, f.BlockAlign(), ErrBlockAlign)
	}
	r.format = f
	return nil
}

func headerReadError(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("end of file inside %s: %w", what, ErrTruncated)
	}
	return fmt.Errorf("wav: read %s: %w", what, err)
}

func chunkReadError(id string, off, size int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("chunk %q at offset %d declares %d bytes but the file ends first: %w", id, off, size, ErrChunkSize)
	}
	return fmt.Errorf("wav: read chunk %q at offset %d: %w", id, off, err)
}

func chunkBeyondRIFF(id string, off, size, end int64) error {
	return fmt.Errorf("chunk %q at offset %d with %d bytes ends past the RIFF end at %d: %w", id, off, size, end, ErrChunkSize)
}

// Read reads raw bytes of the data chunk (encoded as the file's Encoding)
// into p. It returns io.EOF at the end of the data, and an error wrapping
// ErrTruncated if the input ends before the declared size.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.remaining == 0 {
		r.err = io.EOF
		return 0, io.EOF
	}
	if r.remaining > 0 && int64(len(p)) > r.remaining {
		p = p[:r.remaining]
	}
	n, err := r.r.Read(p)
	if r.remaining > 0 {
		r.remaining -= int64(n)
	}
	if err != nil {
		r.err = r.endError(err)
		if r.err == io.EOF && n > 0 {
			return n, nil
		}
		return n, r.err
	}
	return n, nil
}

// ReadSamples reads whole frames of interleaved samples into dst, decoding
// G.711 to 16-bit linear PCM. It fills dst as far as the data allows,
// rounded down to whole frames, and returns the number of samples written.
// At the end of the data it returns 0, io.EOF. If the input ends before the
// declared size it returns the samples that were there with an error
// wrapping ErrTruncated; a partial trailing frame is dropped. A dst shorter
// than one frame returns io.ErrShortBuffer. It allocates nothing.
func (r *Reader) ReadSamples(dst []int16) (int, error) {
	ch := r.format.Channels
	if len(dst) == 0 {
		return 0, nil
	}
	if len(dst) < ch {
		return 0, io.ErrShortBuffer
	}
	block := r.format.BlockAlign()
	total := 0
	for r.err == nil && len(dst)-total >= ch {
		want := min((len(dst)-total)/ch, len(r.buf)/block) * block
		if r.remaining >= 0 {
			want = int(min(int64(want), r.remaining/int64(block)*int64(block)))
			if want == 0 {
				r.err = io.EOF // at most a partial frame is left: not audio
				break
			}
		}
		n, err := io.ReadFull(r.r, r.buf[:want])
		if r.remaining > 0 {
			r.remaining -= int64(n)
		}
		total += r.decode(dst[total:], r.buf[:n/block*block])
		if err != nil {
			r.err = r.endError(err)
		}
	}
	if r.err == io.EOF && total > 0 {
		return total, nil
	}
	return total, r.err
}

// decode converts whole frames of raw data into samples.
func (r *Reader) decode(dst []int16, raw []byte) int {
	switch r.format.Encoding {
	case ULaw:
		return g711.DecodeULawTo(dst, raw)
	case ALaw:
		return g711.DecodeALawTo(dst, raw)
	default:
		n, _ := pcm.BytesToInt16To(dst, raw) // raw is whole frames: even length
		return n
	}
}

// endError classifies an error from the underlying reader during data.
func (r *Reader) endError(err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("wav: read data: %w", err)
	}
	if r.remaining > 0 {
		return fmt.Errorf("data ends %d bytes short of the declared %d: %w", r.remaining, r.dataLen, ErrTruncated)
	}
	return io.EOF
}

// ReadAll reads a whole WAV file from r and returns its format and
// interleaved samples. Memory grows with the samples actually present, not
// with the size the header declares. On ErrTruncated the samples read
// before the end are returned with the error.
func ReadAll(r io.Reader) (Format, []int16, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Format{}, nil, err
	}
	const maxPrealloc = 1 << 14 // samples; beyond that, let append grow
	size := 4096
	if fr := rd.Frames(); fr >= 0 {
		size = int(min(fr*int64(rd.format.Channels), maxPrealloc))
	}
	samples := make([]int16, 0, max(size, rd.format.Channels))
	for {
		if cap(samples)-len(samples) < rd.format.Channels {
			samples = slices.Grow(samples, cap(samples)) // double
		}
		n, err := rd.ReadSamples(samples[len(samples):cap(samples)])
		samples = samples[:len(samples)+n]
		if err == io.EOF {
			return rd.format, samples, nil
		}
		if err != nil {
			return rd.format, samples, err
		}
	}
}
