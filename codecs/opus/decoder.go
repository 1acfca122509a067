package opus

import (
	"fmt"

	hopus "github.com/hraban/opus"
)

// Decoder decodes Opus packets to PCM16 with libopus, conceals lost packets
// and recovers them from in-band FEC. It is not safe for concurrent use; it
// belongs to one stream. Its memory is Go memory, so it needs no Close.
type Decoder struct {
	dec      *hopus.Decoder
	rate     int
	channels int
}

// NewDecoder returns a Decoder producing rate Hz (8000, 12000, 16000, 24000
// or 48000: libopus resamples internally, whatever rate the packets were
// encoded at) with channels channels (1, or 2 for interleaved stereo; a
// mono decoder downmixes stereo packets).
func NewDecoder(rate, channels int) (*Decoder, error) {
	switch rate {
	case 8000, 12000, 16000, 24000, 48000:
	default:
		return nil, fmt.Errorf("%w: %d Hz (decoder takes 8000, 12000, 16000, 24000 or 48000)", ErrUnsupportedRate, rate)
	}
	if channels != 1 && channels != 2 {
		return nil, fmt.Errorf("%w: %d (decoder takes 1 or 2)", ErrUnsupportedChannels, channels)
	}
	dec, err := hopus.NewDecoder(rate, channels)
	if err != nil {
		return nil, libError("new decoder", err)
	}
	return &Decoder{dec: dec, rate: rate, channels: channels}, nil
}

// SampleRate returns the output rate in Hz.
func (d *Decoder) SampleRate() int { return d.rate }

// DecodeTo decodes packet into dst and returns the number of samples per
// channel written (interleaved when stereo). dst must hold the packet's
// duration (PacketSamples times channels, at most 120 ms). A packet whose
// framing is invalid gives ErrInvalidPacket naming the problem; an empty one
// gives ErrEmptyPacket (use ConcealTo for a lost packet). DecodeTo does not
// allocate.
func (d *Decoder) DecodeTo(dst []int16, packet []byte) (int, error) {
	samples, err := PacketSamples(packet, d.rate)
	if err != nil {
		return 0, fmt.Errorf("decode: %w", err)
	}
	if need := samples * d.channels; len(dst) < need {
		return 0, fmt.Errorf("decode: %w: %d samples for a packet of %d", ErrShortBuffer, len(dst), need)
	}
	n, err := d.dec.Decode(packet, dst[:len(dst):len(dst)])
	if err != nil {
		return 0, libError("decode", err)
	}
	return n, nil
}

// DecodeFECTo recovers a lost packet from the in-band FEC data of
// nextPacket, the packet that followed it, writing len(dst)/channels samples
// per channel: len(dst) is the lost duration and must be a whole number of
// 2.5 ms (one 20 ms frame on the call path). Call it before decoding
// nextPacket itself with DecodeTo. When nextPacket carries no FEC (the
// encoder had FEC off, it is CELT-only, or loss was set to 0) libopus
// conceals instead, as ConcealTo would.
func (d *Decoder) DecodeFECTo(dst []int16, nextPacket []byte) (int, error) {
	samples, err := d.lossLength(len(dst))
	if err != nil {
		return 0, fmt.Errorf("decode fec: %w", err)
	}
	if _, err := PacketSamples(nextPacket, d.rate); err != nil {
		return 0, fmt.Errorf("decode fec: %w", err)
	}
	n := samples * d.channels
	if err := d.dec.DecodeFEC(nextPacket, dst[:n:n]); err != nil {
		return 0, libError("decode fec", err)
	}
	return samples, nil
}

// ConcealTo writes samples samples per channel of packet loss concealment
// (PLC) into dst: libopus extrapolates the audio decoded so far, fading to
// silence over long losses. samples must be a whole number of 2.5 ms, at
// most 120 ms, and dst must hold samples*channels.
func (d *Decoder) ConcealTo(dst []int16, samples int) (int, error) {
	if _, err := d.lossLength(samples * d.channels); err != nil {
		return 0, fmt.Errorf("conceal: %w", err)
	}
	n := samples * d.channels
	if len(dst) < n {
		return 0, fmt.Errorf("conceal: %w: %d samples for %d", ErrShortBuffer, len(dst), n)
	}
	if err := d.dec.DecodePLC(dst[:n:n]); err != nil {
		return 0, libError("conceal", err)
	}
	return samples, nil
}

// lossLength checks that total interleaved samples are a whole number of
// 2.5 ms, 2.5 to 120 ms, and returns the samples per channel.
func (d *Decoder) lossLength(total int) (int, error) {
	unit := d.rate / 400
	samples := total / d.channels
	if total%d.channels != 0 || samples%unit != 0 || samples < unit || samples > 48*unit {
		return 0, fmt.Errorf("%w: %d samples at %d Hz x%d (want a multiple of 2.5 ms = %d, at most 120 ms)",
			ErrFrameSize, total, d.rate, d.channels, unit*d.channels)
	}
	return samples, nil
}

// Reset returns the decoder to its state after NewDecoder, e.g. when a new
// stream (new SSRC) starts. hraban/opus has no decoder reset, so Reset
// allocates a fresh libopus state (about 18 KB); it is not a per-frame call.
func (d *Decoder) Reset() error {
	dec, err := hopus.NewDecoder(d.rate, d.channels)
	if err != nil {
		return libError("reset decoder", err)
	}
	d.dec = dec
	return nil
}
