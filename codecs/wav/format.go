package wav

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Encoding is how samples are stored in the data chunk. Its values are the
// WAVE format codes.
type Encoding uint16

// The supported encodings.
const (
	// PCM16 is signed 16-bit little-endian linear PCM (WAVE_FORMAT_PCM).
	PCM16 Encoding = 1
	// ALaw is ITU-T G.711 A-law, 8 bits per sample (WAVE_FORMAT_ALAW).
	ALaw Encoding = 6
	// ULaw is ITU-T G.711 µ-law, 8 bits per sample (WAVE_FORMAT_MULAW).
	ULaw Encoding = 7
)

// formatExtensible is WAVE_FORMAT_EXTENSIBLE, whose real format code is the
// first two bytes of the sub-format GUID.
const formatExtensible = 0xFFFE

// guidTail is the part of the KSDATAFORMAT_SUBTYPE_* GUIDs after the format
// code: {xxxxxxxx-0000-0010-8000-00AA00389B71}.
var guidTail = [14]byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// String returns the encoding's name.
func (e Encoding) String() string {
	switch e {
	case PCM16:
		return "pcm16"
	case ALaw:
		return "alaw"
	case ULaw:
		return "ulaw"
	}
	return fmt.Sprintf("format 0x%04X", uint16(e))
}

// BytesPerSample returns the size of one sample of one channel, or 0 for an
// unsupported encoding.
func (e Encoding) BytesPerSample() int {
	switch e {
	case PCM16:
		return 2
	case ALaw, ULaw:
		return 1
	}
	return 0
}

// Format describes the audio in a WAV file.
type Format struct {
	// Encoding is the sample encoding in the data chunk.
	Encoding Encoding
	// SampleRate is in Hz (frames per second).
	SampleRate int
	// Channels is 1 (mono) or 2 (stereo, interleaved left then right).
	Channels int
}

// BlockAlign returns the size in bytes of one frame: one sample of every
// channel.
func (f Format) BlockAlign() int {
	return f.Channels * f.Encoding.BytesPerSample()
}

// Validate reports whether f can be written, with an error wrapping the
// sentinel of the first problem found.
func (f Format) Validate() error {
	if f.Encoding.BytesPerSample() == 0 {
		return fmt.Errorf("%s: %w", f.Encoding, ErrUnsupportedFormat)
	}
	switch {
	case f.Channels == 0:
		return ErrZeroChannels
	case f.Channels < 0 || f.Channels > 2:
		return fmt.Errorf("%d channels: %w", f.Channels, ErrChannels)
	case f.SampleRate == 0:
		return ErrZeroSampleRate
	case f.SampleRate < 0 || int64(f.SampleRate)*int64(f.BlockAlign()) > math.MaxUint32:
		return fmt.Errorf("%d Hz: %w", f.SampleRate, ErrSampleRate)
	}
	return nil
}

// headerLen returns the length of the header AppendHeader writes for f: 44
// bytes for PCM, 58 for G.711 (18-byte fmt plus a fact chunk).
func (f Format) headerLen() int {
	if f.Encoding == PCM16 {
		return 12 + 8 + 16 + 8
	}
	return 12 + 8 + 18 + 12 + 8
}

// maxDataLen is the largest data chunk whose file sizes still fit the
// 32-bit RIFF size field, keeping one byte for padding.
func (f Format) maxDataLen() int64 {
	return math.MaxUint32 - int64(f.headerLen()-8) - 1
}

// AppendHeader appends to dst a WAV header for dataLen bytes of data in
// format f, ready to be followed by the data and, when dataLen is odd, one
// zero pad byte. It lets a caller stream a file of known length to output
// that cannot seek.
func AppendHeader(dst []byte, f Format, dataLen int64) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return dst, err
	}
	if dataLen < 0 || dataLen > f.maxDataLen() {
		return dst, fmt.Errorf("%d bytes: %w", dataLen, ErrTooLarge)
	}
	if dataLen%int64(f.BlockAlign()) != 0 {
		return dst, fmt.Errorf("%d bytes for %d-byte frames: %w", dataLen, f.BlockAlign(), ErrPartialFrame)
	}
	return appendHeader(dst, f, dataLen), nil
}

// appendHeader writes the header of a validated format and data length.
func appendHeader(dst []byte, f Format, dataLen int64) []byte {
	le := binary.LittleEndian
	riff := uint32(int64(f.headerLen()-8) + dataLen + dataLen&1)
	dst = append(dst, "RIFF"...)
	dst = le.AppendUint32(dst, riff)
	dst = append(dst, "WAVE"...)
	dst = append(dst, "fmt "...)
	if f.Encoding == PCM16 {
		dst = le.AppendUint32(dst, 16)
	} else {
		dst = le.AppendUint32(dst, 18)
	}
	block := f.BlockAlign()
	dst = le.AppendUint16(dst, uint16(f.Encoding))
	dst = le.AppendUint16(dst, uint16(f.Channels))
	dst = le.AppendUint32(dst, uint32(f.SampleRate))
	dst = le.AppendUint32(dst, uint32(f.SampleRate*block))
	dst = le.AppendUint16(dst, uint16(block))
	dst = le.AppendUint16(dst, uint16(8*f.Encoding.BytesPerSample()))
	if f.Encoding != PCM16 {
		dst = le.AppendUint16(dst, 0) // cbSize: no extension
		dst = append(dst, "fact"...)
		dst = le.AppendUint32(dst, 4)
		dst = le.AppendUint32(dst, uint32(dataLen/int64(block)))
	}
	dst = append(dst, "data"...)
	return le.AppendUint32(dst, uint32(dataLen))
}
