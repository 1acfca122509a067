package mp3

import (
	"errors"
	"fmt"
)

// frameHeader is the part of an MPEG audio frame header the tests check
// (ISO/IEC 11172-3 section 2.4.2.3; MPEG-2.5 is the unofficial extension
// with version bits 00).
type frameHeader struct {
	version    string // "1", "2" or "2.5"
	layer      int
	bitrate    int // kbps
	sampleRate int
	padding    bool
	mono       bool
	length     int // bytes, header included
	samples    int // per channel
}

var (
	sampleRates = map[string][3]int{"1": {44100, 48000, 32000}, "2": {22050, 24000, 16000}, "2.5": {11025, 12000, 8000}}
	bitratesV1  = [16]int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, -1}
	bitratesV2  = [16]int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, -1}
)

func parseFrameHeader(b []byte) (frameHeader, error) {
	var h frameHeader
	if len(b) < 4 {
		return h, errors.New("short header")
	}
	if b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return h, fmt.Errorf("no frame sync: % X", b[:4])
	}
	switch (b[1] >> 3) & 3 {
	case 0:
		h.version = "2.5"
	case 2:
		h.version = "2"
	case 3:
		h.version = "1"
	default:
		return h, errors.New("reserved version")
	}
	h.layer = 4 - int((b[1]>>1)&3)
	if h.layer != 3 {
		return h, fmt.Errorf("layer %d", h.layer)
	}
	bi := b[2] >> 4
	if h.version == "1" {
		h.bitrate = bitratesV1[bi]
	} else {
		h.bitrate = bitratesV2[bi]
	}
	if h.bitrate <= 0 {
		return h, fmt.Errorf("bitrate index %d", bi)
	}
	si := (b[2] >> 2) & 3
	if si == 3 {
		return h, errors.New("reserved sample rate")
	}
	h.sampleRate = sampleRates[h.version][si]
	h.padding = b[2]&2 != 0
	h.mono = b[3]>>6 == 3
	pad := 0
	if h.padding {
		pad = 1
	}
	if h.version == "1" {
		h.samples = 1152
		h.length = 144*h.bitrate*1000/h.sampleRate + pad
	} else {
		h.samples = 576
		h.length = 72*h.bitrate*1000/h.sampleRate + pad
	}
	return h, nil
}

// parseStream walks a stream frame by frame; the last frame must end
// exactly at the end of the data.
func parseStream(b []byte) ([]frameHeader, error) {
	var frames []frameHeader
	for off := 0; off < len(b); {
		h, err := parseFrameHeader(b[off:])
		if err != nil {
			return frames, fmt.Errorf("frame %d at offset %d: %w", len(frames), off, err)
		}
		if off+h.length > len(b) {
			return frames, fmt.Errorf("frame %d at offset %d: %d bytes, only %d left", len(frames), off, h.length, len(b)-off)
		}
		frames = append(frames, h)
		off += h.length
	}
	return frames, nil
}
