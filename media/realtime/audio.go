package realtime

import (
	"bytes"
	"encoding/base64"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
)

// inputPath turns the client's audio (any chunk size, in the session's
// input format) into the engine's 20 ms frames at 16 kHz: base64, then
// the codec, then one resampling step. The resampler runs at QualityLow
// (flat to 6.4 kHz, aliases below -60 dB): the audio is for speech
// detection and recognition, and it costs 40% of QualityHigh, the largest
// share of a session's receive path. It belongs to the reader goroutine
// and allocates nothing once its buffers have grown.
type inputPath struct {
	f       format
	frame   int // samples per 20 ms at the input rate
	b64     []byte
	carry   []byte  // an odd PCM byte left from the last chunk
	acc     []int16 // samples short of a whole frame
	dec     []int16
	frame16 []int16
	rs      *resample.Resampler
}

func (p *inputPath) init(f format) error {
	p.f = f
	p.frame = media.SamplesPerFrame(f.rate)
	p.frame16 = make([]int16, media.SamplesPerFrame(media.Rate16k))
	if f.rate != media.Rate16k {
		rs, err := resample.New(f.rate, media.Rate16k, resample.QualityLow)
		if err != nil {
			return err
		}
		p.rs = rs
	}
	return nil
}

func (p *inputPath) close() {
	if p.rs != nil {
		p.rs.Close()
		p.rs = nil
	}
}

// reset drops audio short of a frame (input_audio_buffer.clear).
func (p *inputPath) reset() {
	p.acc = p.acc[:0]
	p.carry = p.carry[:0]
}

// appendPayload finds the base64 audio of an input_audio_buffer.append
// event without decoding the JSON (and copying the audio) in full. It
// returns false for anything unusual (escapes, another type), which then
// takes the general path.
func appendPayload(msg []byte) ([]byte, bool) {
	if !bytes.Contains(msg, []byte(`"input_audio_buffer.append"`)) {
		return nil, false
	}
	rest := msg
	for {
		i := bytes.Index(rest, []byte(`"audio"`))
		if i < 0 {
			return nil, false
		}
		rest = rest[i+len(`"audio"`):]
		j := 0
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r') {
			j++
		}
		if j >= len(rest) || rest[j] != ':' {
			continue
		}
		j++
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r') {
			j++
		}
		if j >= len(rest) || rest[j] != '"' {
			return nil, false
		}
		rest = rest[j+1:]
		end := bytes.IndexByte(rest, '"')
		if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
			return nil, false
		}
		return rest[:end], true
	}
}

// feedAudio decodes a chunk (base64 text when encoded, else raw bytes in
// the input format) and feeds whole frames to the session.
func (c *conn) feedAudio(data []byte, encoded bool, eventID string) {
	p := &c.in
	raw := data
	if encoded {
		var err error
		p.b64, err = base64.StdEncoding.AppendDecode(p.b64[:0], data)
		if err != nil {
			c.sendErr("invalid_value", "audio is not valid base64.", "audio", eventID)
			return
		}
		raw = p.b64
	}
	switch p.f.codec {
	case codecPCM:
		if len(p.carry) > 0 {
			p.carry = append(p.carry, raw...)
			raw, p.carry = p.carry, p.carry[:0:0]
		}
		if len(raw)%2 == 1 {
			p.carry = append(p.carry[:0], raw[len(raw)-1])
			raw = raw[:len(raw)-1]
		}
		p.dec = growInt16(p.dec, len(raw)/2)
		_, _ = pcm.BytesToInt16To(p.dec, raw)
	case codecULaw:
		p.dec = growInt16(p.dec, len(raw))
		g711.DecodeULawTo(p.dec, raw)
	case codecALaw:
		p.dec = growInt16(p.dec, len(raw))
		g711.DecodeALawTo(p.dec, raw)
	}
	p.acc = append(p.acc, p.dec...)
	n := 0
	for ; n+p.frame <= len(p.acc); n += p.frame {
		if !c.writeFrame(p.acc[n : n+p.frame]) {
			break
		}
	}
	k := copy(p.acc, p.acc[n:])
	p.acc = p.acc[:k]
}

// writeFrame resamples one input frame to 16 kHz and hands it to the
// session, with the frame at its own rate too (a G.711 session's
// recording is at 8 kHz and takes it as it is).
func (c *conn) writeFrame(frame []int16) bool {
	p := &c.in
	out := frame
	if p.rs != nil {
		n, err := p.rs.ProcessTo(p.frame16, frame)
		if err != nil || n != len(p.frame16) {
			return false
		}
		out = p.frame16
	}
	if err := c.sess.WriteFrameFrom(out, frame); err != nil {
		return false
	}
	return true
}

// flushInput is called before a manual commit: a partial frame is padded
// with silence so the committed audio holds everything appended.
func (c *conn) flushInput() {
	p := &c.in
	if len(p.acc) == 0 {
		return
	}
	for len(p.acc) < p.frame {
		p.acc = append(p.acc, 0)
	}
	c.writeFrame(p.acc[:p.frame])
	p.acc = p.acc[:0]
}

func growInt16(b []int16, n int) []int16 {
	if cap(b) < n {
		return make([]int16, n)
	}
	return b[:n]
}
