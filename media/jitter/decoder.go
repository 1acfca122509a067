package jitter

import (
	"fmt"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
)

// Decoder is a codec as a Playout needs it: it decodes packets to PCM at
// Rate and conceals missing audio. A Decoder belongs to one stream.
type Decoder interface {
	// Rate returns the output sample rate in Hz.
	Rate() int
	// Decode decodes payload into dst and returns the samples written.
	Decode(dst []int16, payload []byte) (int, error)
	// Conceal writes len(dst) samples in place of missing audio. next,
	// when not nil, is the packet that followed a single lost one, from
	// which the codec may rebuild it (FEC).
	Conceal(dst []int16, next []byte) error
}

// G711 decodes PCMU or PCMA at 8 kHz and conceals losses with a PLC.
type G711 struct {
	alaw bool
	plc  PLC // inline: a call's decode touches both, one allocation apart is one more miss
}

// NewG711 returns a G.711 decoder: A-law (PCMA) when alaw, else µ-law
// (PCMU).
func NewG711(alaw bool) *G711 {
	d := &G711{alaw: alaw}
	d.plc.init(8000)
	return d
}

// Rate returns 8000.
func (d *G711) Rate() int { return 8000 }

// Decode expands one G.711 payload (one byte per sample).
func (d *G711) Decode(dst []int16, payload []byte) (int, error) {
	if len(dst) < len(payload) {
		return 0, fmt.Errorf("g711 payload of %d samples into %d: %w", len(payload), len(dst), ErrShortBuffer)
	}
	var n int
	if d.alaw {
		n = g711.DecodeALawTo(dst, payload)
	} else {
		n = g711.DecodeULawTo(dst, payload)
	}
	d.plc.Good(dst[:n])
	return n, nil
}

// Conceal repeats and fades the last pitch periods (G.711 Appendix I
// style); G.711 has no FEC, so next is unused.
func (d *G711) Conceal(dst []int16, _ []byte) error {
	d.plc.Conceal(dst)
	return nil
}

// Opus decodes Opus packets at a chosen rate with libopus, using in-band
// FEC for a single lost packet when its successor is at hand and libopus
// concealment otherwise.
type Opus struct {
	dec  *opus.Decoder
	rate int
}

// NewOpus returns a mono Opus decoder producing rate Hz (8000, 12000,
// 16000, 24000 or 48000; decoding straight to 16 kHz saves a resampler).
func NewOpus(rate int) (*Opus, error) {
	dec, err := opus.NewDecoder(rate, 1)
	if err != nil {
		return nil, fmt.Errorf("opus decoder: %w", err)
	}
	return &Opus{dec: dec, rate: rate}, nil
}

// Rate returns the output rate.
func (d *Opus) Rate() int { return d.rate }

// Decode decodes one packet.
func (d *Opus) Decode(dst []int16, payload []byte) (int, error) {
	return d.dec.DecodeTo(dst, payload)
}

// Conceal rebuilds lost audio from next's FEC when next is set, or
// extrapolates it otherwise. len(dst) must be a whole number of 2.5 ms.
func (d *Opus) Conceal(dst []int16, next []byte) error {
	if next != nil {
		if _, err := d.dec.DecodeFECTo(dst, next); err == nil {
			return nil
		}
	}
	_, err := d.dec.ConcealTo(dst, len(dst))
	return err
}
