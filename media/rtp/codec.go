package rtp

import (
	"fmt"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/jitter"
)

// EngineRate is the rate of the frames ReadFrame returns and WriteFrame
// takes: the analysis rate of DESIGN.md section 4.
const EngineRate = media.Rate16k

// engineFrame is one 20 ms frame at EngineRate.
const engineFrame = EngineRate / 50

// maxPayload bounds an encoded 20 ms frame: 160 bytes of G.711, and Opus
// capped well above any speech bitrate (400 bytes = 160 kbit/s).
const maxPayload = 400

// encoder turns frames at a source rate into payloads of one codec,
// resampling once on the way. It belongs to one goroutine.
type encoder struct {
	alaw    bool
	opus    *opus.Encoder
	rs      *resample.Resampler // nil when the source is at the codec's input rate
	inRate  int                 // the codec's input rate
	scratch []int16
}

func newEncoder(c Codec, srcRate int) (*encoder, error) {
	e := &encoder{}
	switch {
	case c.is(NamePCMU), c.is(NamePCMA):
		e.alaw = c.is(NamePCMA)
		e.inRate = 8000
	case c.is(NameOpus):
		// libopus takes 16 kHz directly: no resampling from the engine
		// rate; 24 kHz sources go up to 48 kHz.
		e.inRate = 16000
		if srcRate > 16000 {
			e.inRate = 48000
		}
		enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: e.inRate, FEC: true})
		if err != nil {
			return nil, fmt.Errorf("opus encoder: %w", err)
		}
		e.opus = enc
	default:
		return nil, fmt.Errorf("%s: %w", c.Name, ErrUnsupportedCodec)
	}
	if srcRate != e.inRate {
		rs, err := resample.New(srcRate, e.inRate, resampleQuality(min(srcRate, e.inRate)))
		if err != nil {
			return nil, fmt.Errorf("resample %d->%d: %w", srcRate, e.inRate, err)
		}
		e.rs = rs
	}
	e.scratch = make([]int16, e.inRate/50)
	return e, nil
}

// resampleQuality is the filter for a conversion whose lower rate is
// lower: QualityLow when that is G.711's 8 kHz, QualityHigh otherwise.
// QualityLow passes 0.40 of the lower rate flat (3.2 kHz, with 3.4 kHz,
// the top of the telephone band, down by less than a decibel) and rejects
// aliases and images by more than 60 dB, below the noise of G.711's
// 8-bit companding; it costs about three quarters of QualityHigh's CPU
// at 8 <-> 16 kHz (TestG711ResampleQuality and the resample package's
// benchmarks give the figures).
func resampleQuality(lower int) resample.Quality {
	if lower <= 8000 {
		return resample.QualityLow
	}
	return resample.QualityHigh
}

// receiveQuality is the filter from a receive codec's rate to the
// engine's (or a Sink's): resample.QualityPhone for G.711's 8 kHz, a half-band
// interpolator flat over the telephone band (to 3.4 kHz) at a quarter of
// QualityLow's CPU and 1.75 ms of delay instead of 2.5, whose images of
// what lies above that band (3.4 to 4 kHz) fall partly attenuated at 4 to
// 4.6 kHz, where the engine's VAD and speech recognition take them for
// the sibilance they are and the recording at 8 kHz cuts them
// (TestG711ReceiveQuality); resampleQuality otherwise.
func receiveQuality(from, to int) resample.Quality {
	if from <= 8000 {
		return resample.QualityPhone
	}
	return resampleQuality(min(from, to))
}

// encode encodes one 20 ms frame at the source rate into dst.
func (e *encoder) encode(dst []byte, src []int16) (int, error) {
	pcm := src
	if e.rs != nil {
		n, err := e.rs.ProcessTo(e.scratch, src)
		if err != nil {
			return 0, err
		}
		pcm = e.scratch[:n]
	}
	switch {
	case e.opus != nil:
		return e.opus.EncodeTo(dst[:min(len(dst), maxPayload)], pcm)
	case e.alaw:
		return g711.EncodeALawTo(dst, pcm), nil
	default:
		return g711.EncodeULawTo(dst, pcm), nil
	}
}

func (e *encoder) close() {
	if e != nil && e.rs != nil {
		e.rs.Close()
	}
}

// silencePayload returns a payload that decodes to silence for c: G.711
// codes for zero, or an Opus packet of a silent frame.
func silencePayload(c Codec) ([]byte, error) {
	switch {
	case c.is(NamePCMU):
		p := make([]byte, 160)
		g711.EncodeULawTo(p, make([]int16, 160))
		return p, nil
	case c.is(NamePCMA):
		p := make([]byte, 160)
		g711.EncodeALawTo(p, make([]int16, 160))
		return p, nil
	}
	enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: 16000})
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	buf := make([]byte, maxPayload)
	var n int
	for range 3 { // past the encoder's start-up
		if n, err = enc.EncodeTo(buf, make([]int16, 320)); err != nil {
			return nil, fmt.Errorf("encode silence: %w", err)
		}
	}
	return buf[:n], nil
}

// rxCodec is the receive side of one negotiated codec: the jitter buffer
// and its decoding playout. Guarded by Session.mu.
type rxCodec struct {
	gen   uint64
	codec Codec
	buf   *jitter.Buffer
	play  *jitter.Playout
	pcm   []int16 // one frame at the decoder's rate
	opus  bool    // codec is Opus (samples asks per packet)
}

func newRxCodec(c Codec, jc jitter.Config, gen uint64) (*rxCodec, error) {
	jc.ClockRate = c.ClockRate
	buf, err := jitter.New(jc)
	if err != nil {
		return nil, fmt.Errorf("jitter buffer: %w", err)
	}
	var dec jitter.Decoder
	switch {
	case c.is(NamePCMU):
		dec = jitter.NewG711(false)
	case c.is(NamePCMA):
		dec = jitter.NewG711(true)
	case c.is(NameOpus):
		// Decode straight to the engine rate: libopus resamples inside.
		d, err := jitter.NewOpus(EngineRate)
		if err != nil {
			return nil, err
		}
		dec = d
	default:
		return nil, fmt.Errorf("%s: %w", c.Name, ErrUnsupportedCodec)
	}
	play, err := jitter.NewPlayout(buf, dec)
	if err != nil {
		return nil, err
	}
	return &rxCodec{gen: gen, codec: c, buf: buf, play: play, pcm: make([]int16, play.Rate()/50), opus: c.is(NameOpus)}, nil
}

// samples returns the duration of an audio payload in clock units, or 0
// when it cannot tell (the buffer then assumes the previous duration).
func (r *rxCodec) samples(payload []byte) int {
	if r.opus {
		n, err := opus.PacketSamples(payload, 48000)
		if err != nil {
			return 0
		}
		return n
	}
	return len(payload)
}
