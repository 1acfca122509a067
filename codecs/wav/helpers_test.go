package wav

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// seekBuffer is an in-memory io.WriteSeeker.
type seekBuffer struct {
	b   []byte
	pos int
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	if need := s.pos + len(p); need > len(s.b) {
		s.b = append(s.b, make([]byte, need-len(s.b))...)
	}
	copy(s.b[s.pos:], p)
	s.pos += len(p)
	return len(p), nil
}

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += int64(s.pos)
	case io.SeekEnd:
		off += int64(len(s.b))
	}
	if off < 0 {
		return 0, errors.New("negative position")
	}
	s.pos = int(off)
	return off, nil
}

// tone returns frames of a stereo-capable test signal: a 440 Hz sine on
// the first channel and 660 Hz on the second, at -6 dBFS.
func tone(rate, channels, frames int) []int16 {
	s := make([]int16, frames*channels)
	for i := range frames {
		for c := range channels {
			f := 440.0 + 220*float64(c)
			s[i*channels+c] = int16(16000 * math.Sin(2*math.Pi*f*float64(i)/float64(rate)))
		}
	}
	return s
}

// le16 and le32 build little-endian fields for hand-made headers.
func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// chunk builds a RIFF chunk with its pad byte.
func chunk(id string, payload []byte) []byte {
	b := cat([]byte(id), le32(uint32(len(payload))), payload)
	if len(payload)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

// riff wraps chunks in a RIFF container with a correct size.
func riff(form string, chunks ...[]byte) []byte {
	body := cat(chunks...)
	return cat([]byte("RIFF"), le32(uint32(4+len(body))), []byte(form), body)
}

// fmtPCM builds a 16-byte fmt payload.
func fmtPayload(code, channels uint16, rate uint32, block, bits uint16) []byte {
	return cat(le16(code), le16(channels), le32(rate), le32(rate*uint32(block)), le16(block), le16(bits))
}

// fmtExtensible builds a 40-byte WAVE_FORMAT_EXTENSIBLE payload whose
// sub-format GUID starts with sub.
func fmtExtensible(sub, channels uint16, rate uint32, bits uint16) []byte {
	block := channels * bits / 8
	return cat(fmtPayload(formatExtensible, channels, rate, block, bits),
		le16(22), le16(bits), le32(3), le16(sub), guidTail[:])
}
