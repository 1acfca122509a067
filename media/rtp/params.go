package rtp

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/voiced/voiced/media/quality"
)

// The RTP encoding names a Session carries (RFC 3551, RFC 7587, RFC 4733,
// RFC 3389), compared case-insensitively.
const (
	NamePCMU  = "PCMU"
	NamePCMA  = "PCMA"
	NameOpus  = "opus"
	NameDTMF  = "telephone-event"
	NameCN    = "CN"
	PayloadCN = 13 // the static comfort noise payload type (RFC 3551)
)

// Codec is one negotiated payload format.
type Codec struct {
	// PT is the payload type number.
	PT uint8
	// Name is the encoding name from a=rtpmap ("PCMU", "opus", ...).
	Name string
	// ClockRate is the RTP clock rate in Hz (8000 for G.711, 48000 for
	// Opus and usually for its telephone-event).
	ClockRate int
	// Channels is 1, or 2 for Opus (which is always signalled as /2 and
	// carries mono here).
	Channels int
}

func (c Codec) is(name string) bool { return strings.EqualFold(c.Name, name) }

// Params is the negotiated media of a call at one moment (SDP offer and
// answer, RFC 3264). Update takes a new Params for a re-INVITE.
type Params struct {
	// Remote is the peer's RTP address from its SDP. Packets go there
	// until the first packet from the peer latches its real source
	// (symmetric RTP, RFC 4961), which then wins.
	Remote netip.AddrPort
	// RemoteRTCP is the peer's RTCP address (a=rtcp); zero means Remote's
	// port plus one, or Remote itself with RTCPMux.
	RemoteRTCP netip.AddrPort
	// RTCPMux is true when both sides agreed to a=rtcp-mux (RFC 5761):
	// RTCP is then sent to and expected on the RTP ports.
	RTCPMux bool
	// Codec is the audio format with the payload type we send with, and
	// RecvPT the one we receive it with (they differ when the offer and
	// answer numbered it differently).
	Codec  Codec
	RecvPT uint8
	// DTMF is telephone-event with the payload type we send it with; an
	// empty Name means the peer has none. RecvDTMFPT is ours.
	DTMF       Codec
	RecvDTMFPT uint8
	// CN is true when comfort noise (PT 13) was negotiated: received CN
	// is always understood, but it is sent only when CN is true and
	// Config.SendCN is set.
	CN bool
	// Send and Receive give the direction (a=sendrecv, sendonly, ...):
	// Send false (the peer holds us) stops our packets; Receive false (we
	// hold the peer) suspends the media timeout.
	Send, Receive bool
}

func (p Params) validate() error {
	c := p.Codec
	switch {
	case c.is(NamePCMU) && c.ClockRate == 8000, c.is(NamePCMA) && c.ClockRate == 8000, c.is(NameOpus) && c.ClockRate == 48000:
	default:
		return fmt.Errorf("%s/%d: %w", c.Name, c.ClockRate, ErrUnsupportedCodec)
	}
	if p.DTMF.Name != "" && (!p.DTMF.is(NameDTMF) || p.DTMF.ClockRate <= 0) {
		return fmt.Errorf("dtmf %s/%d: %w", p.DTMF.Name, p.DTMF.ClockRate, ErrUnsupportedCodec)
	}
	if !p.Remote.IsValid() {
		return fmt.Errorf("no remote address: %w", ErrBadConfig)
	}
	return nil
}

// qualityCodec maps the audio codec to its E-model parameters.
func (p Params) qualityCodec() quality.Codec {
	q, _ := quality.CodecByName(p.Codec.Name)
	return q
}

// Digit is one DTMF key press received as RFC 4733 telephone-events.
type Digit struct {
	// Digit is '0'-'9', '*', '#', 'A'-'D', or '!' for a hook flash
	// (event 16).
	Digit rune
	// Duration is how long the key was held, from the event's duration
	// field (the last one received when the end was lost).
	Duration time.Duration
	// Volume is the power level in -dBm0 (0 to 63).
	Volume int
}

// eventDigit maps RFC 4733 section 3.2 event codes to digits.
func eventDigit(ev byte) (rune, bool) {
	switch {
	case ev <= 9:
		return rune('0' + ev), true
	case ev == 10:
		return '*', true
	case ev == 11:
		return '#', true
	case ev >= 12 && ev <= 15:
		return rune('A' + ev - 12), true
	case ev == 16:
		return '!', true
	}
	return 0, false
}

// digitEvent is the inverse of eventDigit.
func digitEvent(d rune) (byte, bool) {
	switch {
	case d >= '0' && d <= '9':
		return byte(d - '0'), true
	case d == '*':
		return 10, true
	case d == '#':
		return 11, true
	case d >= 'A' && d <= 'D':
		return byte(d-'A') + 12, true
	case d >= 'a' && d <= 'd':
		return byte(d-'a') + 12, true
	case d == '!':
		return 16, true
	}
	return 0, false
}
