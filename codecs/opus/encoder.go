package opus

import (
	"fmt"

	hopus "github.com/hraban/opus"
)

// Encoder defaults, applied to zero fields of EncoderConfig.
const (
	DefaultSampleRate        = 48000
	DefaultBitrate           = 24000 // bits per second: wideband speech with room for FEC
	DefaultComplexity        = 5
	DefaultPacketLossPercent = 10 // used only when FEC is on and no figure is given
)

// EncoderConfig configures an Encoder. The zero value of every field means
// its default.
type EncoderConfig struct {
	// SampleRate of the PCM input: 48000 (default) or 16000 Hz.
	SampleRate int
	// Channels must be 1 (mono, the default).
	Channels int
	// Bitrate in bits per second, 6000 to 510000; 0 means DefaultBitrate.
	Bitrate int
	// Complexity 1 (fastest) to 10 (best); 0 means DefaultComplexity, so
	// libopus's complexity 0 is not reachable.
	Complexity int
	// FEC turns on in-band forward error correction (LBRR): each packet also
	// carries a coarse copy of the previous frame, which DecodeFECTo recovers
	// when that frame's packet is lost. libopus only adds it in SILK and
	// hybrid modes and only when PacketLossPercent is above zero.
	FEC bool
	// PacketLossPercent is the expected loss, 0 to 100; it makes the encoder
	// more robust and sizes the FEC. 0 means 0 without FEC and
	// DefaultPacketLossPercent with FEC, since FEC at 0% emits nothing.
	PacketLossPercent int
	// DTX turns on discontinuous transmission: during silence the encoder
	// sends packets of at most two bytes (IsDTX) instead of full frames.
	DTX bool
	// LowDelay selects libopus's restricted low-delay application: CELT
	// only (no SILK, so no in-band FEC), 2.5 ms of codec delay instead of
	// 6.5, and at 16 kHz input about half the encoding CPU of VOIP mode at
	// complexity 1.
	LowDelay bool
}

// withDefaults fills zero fields and validates the result.
func (c EncoderConfig) withDefaults() (EncoderConfig, error) {
	if c.SampleRate == 0 {
		c.SampleRate = DefaultSampleRate
	}
	if c.Channels == 0 {
		c.Channels = 1
	}
	if c.Bitrate == 0 {
		c.Bitrate = DefaultBitrate
	}
	if c.Complexity == 0 {
		c.Complexity = DefaultComplexity
	}
	if c.FEC && c.PacketLossPercent == 0 {
		c.PacketLossPercent = DefaultPacketLossPercent
	}
	switch {
	case c.SampleRate != 48000 && c.SampleRate != 16000:
		return c, fmt.Errorf("%w: %d Hz (encoder takes 48000 or 16000)", ErrUnsupportedRate, c.SampleRate)
	case c.Channels != 1:
		return c, fmt.Errorf("%w: %d (encoder takes mono only)", ErrUnsupportedChannels, c.Channels)
	case c.Bitrate < 6000 || c.Bitrate > 510000:
		return c, fmt.Errorf("%w: bitrate %d b/s outside 6000..510000", ErrBadConfig, c.Bitrate)
	case c.Complexity < 1 || c.Complexity > 10:
		return c, fmt.Errorf("%w: complexity %d outside 1..10", ErrBadConfig, c.Complexity)
	case c.PacketLossPercent < 0 || c.PacketLossPercent > 100:
		return c, fmt.Errorf("%w: packet loss %d%% outside 0..100", ErrBadConfig, c.PacketLossPercent)
	}
	return c, nil
}

// Encoder encodes mono PCM16 frames into Opus packets with libopus in its
// VOIP application mode (or restricted low delay, EncoderConfig.LowDelay). It is not safe for concurrent use; it belongs to one
// stream. Its memory is Go memory, so it needs no Close.
type Encoder struct {
	enc *hopus.Encoder
	cfg EncoderConfig
}

// NewEncoder returns an Encoder for cfg (zero fields take their defaults).
func NewEncoder(cfg EncoderConfig) (*Encoder, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	app := hopus.AppVoIP
	if cfg.LowDelay {
		app = hopus.AppRestrictedLowdelay
	}
	enc, err := hopus.NewEncoder(cfg.SampleRate, cfg.Channels, app)
	if err != nil {
		return nil, libError("new encoder", err)
	}
	e := &Encoder{enc: enc, cfg: cfg}
	for _, set := range []struct {
		name string
		err  error
	}{
		{"bitrate", enc.SetBitrate(cfg.Bitrate)},
		{"complexity", enc.SetComplexity(cfg.Complexity)},
		{"fec", enc.SetInBandFEC(cfg.FEC)},
		{"packet loss", enc.SetPacketLossPerc(cfg.PacketLossPercent)},
		{"dtx", enc.SetDTX(cfg.DTX)},
	} {
		if set.err != nil {
			return nil, libError("set "+set.name, set.err)
		}
	}
	return e, nil
}

// Config returns the configuration in effect, defaults filled in.
func (e *Encoder) Config() EncoderConfig { return e.cfg }

// EncodeTo encodes one frame of pcm (2.5, 5, 10, 20, 40 or 60 ms at the
// configured rate; 20 ms is the call path's frame) into dst and returns the
// packet length. dst of MaxPacketSize bytes always suffices; a shorter dst
// caps the packet size, and one too short for the frame gives ErrShortBuffer.
// A result of at most two bytes is a DTX frame (IsDTX): a sender may skip
// it, as RFC 7587 section 3.1.3 allows. EncodeTo does not allocate.
func (e *Encoder) EncodeTo(dst []byte, pcm []int16) (int, error) {
	if err := checkFrame(len(pcm), e.cfg.SampleRate); err != nil {
		return 0, err
	}
	if len(dst) < 3 {
		return 0, fmt.Errorf("%w: %d bytes for a packet", ErrShortBuffer, len(dst))
	}
	// hraban/opus gives libopus cap(dst) as the limit; pin it to len.
	n, err := e.enc.Encode(pcm, dst[:len(dst):len(dst)])
	if err != nil {
		return 0, libError("encode", err)
	}
	return n, nil
}

// InDTX reports libopus's DTX state (OPUS_GET_IN_DTX): whether the last
// frame encoded was either not sent because of DTX (a packet of at most two
// bytes) or a comfort-noise update sent during DTX. It is false with DTX
// off. Unlike EncodeTo it allocates 4 bytes per call (hraban/opus passes the
// result through a Go pointer); per-packet decisions need only IsDTX.
func (e *Encoder) InDTX() bool {
	in, err := e.enc.InDTX()
	return err == nil && in
}

// SetBitrate changes the target bitrate in bits per second (6000..510000)
// from the next frame on, e.g. on congestion feedback.
func (e *Encoder) SetBitrate(bps int) error {
	if bps < 6000 || bps > 510000 {
		return fmt.Errorf("%w: bitrate %d b/s outside 6000..510000", ErrBadConfig, bps)
	}
	if err := e.enc.SetBitrate(bps); err != nil {
		return libError("set bitrate", err)
	}
	e.cfg.Bitrate = bps
	return nil
}

// SetPacketLossPercent changes the expected loss (0..100) from the next frame
// on, e.g. from RTCP receiver reports.
func (e *Encoder) SetPacketLossPercent(p int) error {
	if p < 0 || p > 100 {
		return fmt.Errorf("%w: packet loss %d%% outside 0..100", ErrBadConfig, p)
	}
	if err := e.enc.SetPacketLossPerc(p); err != nil {
		return libError("set packet loss", err)
	}
	e.cfg.PacketLossPercent = p
	return nil
}

// Reset returns the encoder to its state after NewEncoder, keeping the
// configuration, e.g. when a new stream starts.
func (e *Encoder) Reset() error {
	if err := e.enc.Reset(); err != nil {
		return libError("reset encoder", err)
	}
	return nil
}

// checkFrame checks that n samples are one Opus frame duration at rate.
func checkFrame(n, rate int) error {
	for _, d := range [...]int{1, 2, 4, 8, 16, 24} { // in units of 2.5 ms
		if n == d*rate/400 {
			return nil
		}
	}
	return fmt.Errorf("%w: %d samples at %d Hz (want 2.5, 5, 10, 20, 40 or 60 ms: %d for 20 ms)",
		ErrFrameSize, n, rate, rate/50)
}
