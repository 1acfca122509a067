package sdp

import (
	"strconv"
	"strings"
)

// Codec is one RTP payload format: what a=rtpmap and a=fmtp say about a
// payload type.
type Codec struct {
	// PT is the RTP payload type number (0-127).
	PT uint8
	// Name is the encoding name as in a=rtpmap ("PCMU", "opus",
	// "telephone-event"); compared case-insensitively (RFC 4855 section 3).
	Name string
	// ClockRate is the RTP clock rate in Hz.
	ClockRate int
	// Channels is the channel count; 1 when a=rtpmap gives none.
	Channels int
	// Fmtp is the a=fmtp parameter string, without the payload type.
	Fmtp string
}

// Formats voiced speaks, with the payload types it uses in its own
// offers. PCMU and PCMA are static (RFC 3551); Opus and telephone-event
// are dynamic, so an answer reuses the offerer's numbers.
var (
	// PCMU is G.711 mu-law.
	PCMU = Codec{PT: 0, Name: "PCMU", ClockRate: 8000, Channels: 1}
	// PCMA is G.711 A-law.
	PCMA = Codec{PT: 8, Name: "PCMA", ClockRate: 8000, Channels: 1}
	// Opus is RFC 7587 Opus: always opus/48000/2 in SDP, whatever is sent.
	Opus = Codec{PT: 111, Name: "opus", ClockRate: 48000, Channels: 2, Fmtp: "minptime=10;useinbandfec=1"}
	// TelephoneEvent8k is RFC 4733 DTMF beside an 8 kHz codec.
	TelephoneEvent8k = Codec{PT: 101, Name: "telephone-event", ClockRate: 8000, Channels: 1, Fmtp: "0-16"}
	// TelephoneEvent48k is RFC 4733 DTMF beside Opus.
	TelephoneEvent48k = Codec{PT: 110, Name: "telephone-event", ClockRate: 48000, Channels: 1, Fmtp: "0-16"}
)

// Supported lists every format voiced can answer, in its own order of
// preference for offers.
func Supported() []Codec {
	return []Codec{PCMU, PCMA, Opus, TelephoneEvent8k, TelephoneEvent48k}
}

// Same reports whether c and d are the same format (name, clock rate,
// channels), whatever their payload types.
func (c Codec) Same(d Codec) bool {
	return strings.EqualFold(c.Name, d.Name) && c.ClockRate == d.ClockRate && c.channels() == d.channels()
}

// IsDTMF reports whether c is RFC 4733 telephone-event.
func (c Codec) IsDTMF() bool { return strings.EqualFold(c.Name, "telephone-event") }

func (c Codec) channels() int {
	if c.Channels == 0 {
		return 1
	}
	return c.Channels
}

// rtpmap returns the a=rtpmap value of c: "0 PCMU/8000", "111 opus/48000/2".
func (c Codec) rtpmap() string {
	s := strconv.Itoa(int(c.PT)) + " " + c.Name + "/" + strconv.Itoa(c.ClockRate)
	if c.channels() != 1 {
		s += "/" + strconv.Itoa(c.channels())
	}
	return s
}

// staticCodecs are the RFC 3551 static audio payload types a peer may
// offer without a=rtpmap that matter to us.
var staticCodecs = map[uint8]Codec{
	0: PCMU,
	8: PCMA,
}

// Codecs returns the RTP formats of m in m= order, resolved through
// a=rtpmap and a=fmtp (static payload types without a=rtpmap take their
// RFC 3551 meaning). Formats that cannot be resolved are skipped.
func (m *Media) Codecs() []Codec {
	var out []Codec
	for _, f := range m.Formats {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 127 {
			continue
		}
		pt := uint8(n)
		c, ok := m.codec(pt)
		if !ok {
			continue
		}
		out = append(out, c)
	}
	return out
}

func (m *Media) codec(pt uint8) (Codec, bool) {
	var c Codec
	found := false
	if s, ok := staticCodecs[pt]; ok {
		c, found = s, true
		c.Fmtp = ""
	}
	ptStr := strconv.Itoa(int(pt))
	for _, a := range m.Attributes {
		switch {
		case strings.EqualFold(a.Key, "rtpmap"):
			p, rest, ok := strings.Cut(a.Value, " ")
			if !ok || p != ptStr {
				continue
			}
			parts := strings.Split(strings.TrimSpace(rest), "/")
			if len(parts) < 2 {
				continue
			}
			rate, err := strconv.Atoi(parts[1])
			if err != nil || rate <= 0 {
				continue
			}
			ch := 1
			if len(parts) > 2 {
				if ch, err = strconv.Atoi(parts[2]); err != nil || ch <= 0 {
					continue
				}
			}
			c = Codec{PT: pt, Name: parts[0], ClockRate: rate, Channels: ch, Fmtp: c.Fmtp}
			found = true
		case strings.EqualFold(a.Key, "fmtp"):
			p, rest, ok := strings.Cut(a.Value, " ")
			if ok && p == ptStr {
				c.Fmtp = strings.TrimSpace(rest)
			}
		}
	}
	c.PT = pt
	return c, found
}

// Direction is a stream's direction attribute (RFC 3264 section 5.1), as
// seen by the side that wrote it.
type Direction uint8

// Directions. The zero value is SendRecv, the default when an m= section
// has no direction attribute.
const (
	SendRecv Direction = iota
	SendOnly
	RecvOnly
	Inactive
)

// String returns the attribute name: "sendrecv", "sendonly"...
func (d Direction) String() string {
	switch d {
	case SendOnly:
		return "sendonly"
	case RecvOnly:
		return "recvonly"
	case Inactive:
		return "inactive"
	}
	return "sendrecv"
}

// Sends reports whether the side with direction d sends media.
func (d Direction) Sends() bool { return d == SendRecv || d == SendOnly }

// Receives reports whether the side with direction d receives media.
func (d Direction) Receives() bool { return d == SendRecv || d == RecvOnly }

// Reverse returns the direction the other side sees: sendonly becomes
// recvonly and the other way round.
func (d Direction) Reverse() Direction {
	switch d {
	case SendOnly:
		return RecvOnly
	case RecvOnly:
		return SendOnly
	}
	return d
}

// Intersect returns the direction that allows only what both d and e
// allow.
func (d Direction) Intersect(e Direction) Direction {
	send, recv := d.Sends() && e.Sends(), d.Receives() && e.Receives()
	switch {
	case send && recv:
		return SendRecv
	case send:
		return SendOnly
	case recv:
		return RecvOnly
	}
	return Inactive
}

// direction returns m's direction attribute, else the session's, else
// SendRecv.
func (s *Session) direction(m *Media) Direction {
	if d, ok := directionOf(m.Attributes); ok {
		return d
	}
	if d, ok := directionOf(s.Attributes); ok {
		return d
	}
	return SendRecv
}

func directionOf(as []Attribute) (Direction, bool) {
	for _, a := range as {
		switch strings.ToLower(a.Key) {
		case "sendrecv":
			return SendRecv, true
		case "sendonly":
			return SendOnly, true
		case "recvonly":
			return RecvOnly, true
		case "inactive":
			return Inactive, true
		}
	}
	return SendRecv, false
}
