package wav

import (
	"fmt"
	"io"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
)

// Writer writes a WAV file to an io.WriteSeeker. It writes the header at
// once with zero sizes and patches them on Close, so the output is a valid
// file only after Close. Its memory is fixed at construction.
type Writer struct {
	w       io.WriteSeeker
	format  Format
	start   int64 // offset of the header in w
	dataLen int64
	err     error // sticky: the first write error
	closed  bool
	buf     [4096]byte
}

// NewWriter validates f and writes a header for it at the current position
// of w. The Writer does not close w.
func NewWriter(w io.WriteSeeker, f Format) (*Writer, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	start, err := w.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("wav: find header position: %w", err)
	}
	wr := &Writer{w: w, format: f, start: start}
	if _, err := w.Write(appendHeader(wr.buf[:0], f, 0)); err != nil {
		return nil, fmt.Errorf("wav: write header: %w", err)
	}
	return wr, nil
}

// Format returns the format being written.
func (w *Writer) Format() Format {
	return w.format
}

// Write appends raw data bytes already in the file's encoding (for
// example G.711 payloads straight from RTP). The total written by Close
// must be whole frames.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.dataLen+int64(len(p)) > w.format.maxDataLen() {
		return 0, fmt.Errorf("%d more bytes after %d: %w", len(p), w.dataLen, ErrTooLarge)
	}
	n, err := w.w.Write(p)
	w.dataLen += int64(n)
	if err != nil {
		w.err = fmt.Errorf("wav: write data: %w", err)
		return n, w.err
	}
	return n, nil
}

// WriteSamples encodes interleaved samples in the file's encoding and
// writes them. len(samples) must be a multiple of the channel count. It
// allocates nothing.
func (w *Writer) WriteSamples(samples []int16) error {
	if len(samples)%w.format.Channels != 0 {
		return fmt.Errorf("%d samples for %d channels: %w", len(samples), w.format.Channels, ErrPartialFrame)
	}
	if w.closed {
		return ErrClosed
	}
	bps := w.format.Encoding.BytesPerSample()
	if w.dataLen+int64(len(samples)*bps) > w.format.maxDataLen() {
		return fmt.Errorf("%d more samples after %d bytes: %w", len(samples), w.dataLen, ErrTooLarge)
	}
	for len(samples) > 0 {
		n := encode(w.buf[:], samples, w.format.Encoding)
		if _, err := w.Write(w.buf[:n*bps]); err != nil {
			return err
		}
		samples = samples[n:]
	}
	return nil
}

// encode encodes as many samples as fit in dst and returns how many.
func encode(dst []byte, samples []int16, enc Encoding) int {
	switch enc {
	case ULaw:
		return g711.EncodeULawTo(dst, samples)
	case ALaw:
		return g711.EncodeALawTo(dst, samples)
	default:
		return pcm.Int16ToBytesTo(dst, samples)
	}
}

// Close writes the pad byte an odd data chunk needs, patches the sizes in
// the header and leaves w positioned at the end of the file. It does not
// close w. If the data is not whole frames the header is still patched
// (readers drop the partial frame) and an error wrapping ErrPartialFrame is
// returned.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if w.dataLen&1 != 0 {
		w.buf[0] = 0
		if _, err := w.w.Write(w.buf[:1]); err != nil {
			return fmt.Errorf("wav: write pad byte: %w", err)
		}
	}
	end, err := w.w.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("wav: find end of file: %w", err)
	}
	if _, err := w.w.Seek(w.start, io.SeekStart); err != nil {
		return fmt.Errorf("wav: seek to header: %w", err)
	}
	if _, err := w.w.Write(appendHeader(w.buf[:0], w.format, w.dataLen)); err != nil {
		return fmt.Errorf("wav: patch header: %w", err)
	}
	if _, err := w.w.Seek(end, io.SeekStart); err != nil {
		return fmt.Errorf("wav: seek to end: %w", err)
	}
	if block := int64(w.format.BlockAlign()); w.dataLen%block != 0 {
		return fmt.Errorf("%d data bytes for %d-byte frames: %w", w.dataLen, block, ErrPartialFrame)
	}
	return nil
}

// Encode returns a complete WAV file holding the interleaved samples in
// format f, for output that cannot seek. len(samples) must be a multiple of
// f.Channels.
func Encode(f Format, samples []int16) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if len(samples)%f.Channels != 0 {
		return nil, fmt.Errorf("%d samples for %d channels: %w", len(samples), f.Channels, ErrPartialFrame)
	}
	dataLen := int64(len(samples) * f.Encoding.BytesPerSample())
	if dataLen > f.maxDataLen() {
		return nil, fmt.Errorf("%d bytes: %w", dataLen, ErrTooLarge)
	}
	b := make([]byte, 0, int64(f.headerLen())+dataLen+dataLen&1)
	b = appendHeader(b, f, dataLen)
	h := len(b)
	b = b[:h+int(dataLen)]
	encode(b[h:], samples, f.Encoding)
	if dataLen&1 != 0 {
		b = append(b, 0)
	}
	return b, nil
}
