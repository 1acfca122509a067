package sdp

import (
	"net/netip"
	"strconv"
	"strings"
)

// Stream is the outcome of a negotiation for one audio m= line: where to
// send, in which format, and what the remote side said about direction.
type Stream struct {
	// Index is the m= line's position in the remote description.
	Index int
	// Remote is where the remote side receives RTP. Its address is
	// unspecified (0.0.0.0) when the remote put the stream on hold the
	// RFC 2543 way.
	Remote netip.AddrPort
	// Codec is the audio format, with the payload type the remote side
	// expects to receive (we send with it).
	Codec Codec
	// DTMF is the telephone-event format, with the remote's payload
	// type: at Codec's clock rate when offered, else at whatever rate the
	// remote offers (its ClockRate clocks the event timestamps). Its Name
	// is empty when the remote offers none we support.
	DTMF Codec
	// RecvPT and RecvDTMFPT are the payload types we receive the two
	// formats with: equal to the remote's in an answer we build (RFC 3264
	// section 6.1), ours when the remote answered our offer.
	RecvPT, RecvDTMFPT uint8
	// Direction is the remote side's direction attribute, from its point
	// of view.
	Direction Direction
	// PTime is the remote's a=ptime in milliseconds, 0 when absent.
	PTime int
}

// Hold reports whether the remote side stopped receiving: a=sendonly,
// a=inactive, or a 0.0.0.0 connection address (RFC 3264 section 8.4).
func (st Stream) Hold() bool {
	return !st.Direction.Receives() || (st.Remote.Addr().IsValid() && st.Remote.Addr().IsUnspecified())
}

// usableProto reports whether we can run plain RTP over proto.
func usableProto(proto string) bool {
	return proto == "RTP/AVP" || proto == "RTP/AVPF"
}

// Select picks the audio stream and codec to use from a remote
// description (an offer, or the answer to our offer). local lists the
// formats we accept, in any order; the remote's order decides among them.
// It returns ErrNoAudio when there is no plain RTP audio m= line,
// ErrNoCodec when no offered format is in local, ErrNoAddress when the
// chosen stream has no connection address.
func Select(remote *Session, local []Codec) (Stream, error) {
	errOut := ErrNoAudio
	for i := range remote.Media {
		m := &remote.Media[i]
		if !strings.EqualFold(m.Type, "audio") || !usableProto(m.Proto) || m.Port == 0 {
			continue
		}
		errOut = ErrNoCodec
		offered := m.Codecs()
		st := Stream{Index: i, Direction: remote.direction(m)}
		found := false
		for _, c := range offered {
			if c.IsDTMF() {
				continue
			}
			if l, ok := match(local, c); ok {
				st.Codec, st.RecvPT, found = c, l.PT, true
				break
			}
		}
		if !found {
			continue
		}
		// telephone-event at the codec's clock rate (RFC 4733 section
		// 2.1), else any we support: UAs often offer Opus with only
		// telephone-event/8000, and digits matter more than their timing.
		for _, sameRate := range []bool{true, false} {
			for _, c := range offered {
				if !c.IsDTMF() || st.DTMF.Name != "" || (sameRate && c.ClockRate != st.Codec.ClockRate) {
					continue
				}
				if l, ok := match(local, c); ok {
					st.DTMF, st.RecvDTMFPT = c, l.PT
				}
			}
		}
		conn := m.Connection
		if conn == nil {
			conn = remote.Connection
		}
		addr, ok := conn.Addr()
		if !ok {
			return Stream{}, ErrNoAddress
		}
		st.Remote = netip.AddrPortFrom(addr.Unmap(), uint16(m.Port))
		if v, ok := m.Attr("ptime"); ok {
			if p, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && p > 0 && p <= 1000 {
				st.PTime = p
			}
		}
		return st, nil
	}
	return Stream{}, errOut
}

// match finds c in local by format. When the remote answers our offer the
// payload types may differ; the local one is what we receive with.
func match(local []Codec, c Codec) (Codec, bool) {
	for _, l := range local {
		if l.Same(c) {
			return l, true
		}
	}
	return Codec{}, false
}

// Local is what our side of a description says: where we receive, our
// direction and the origin line to write.
type Local struct {
	// Addr is our RTP address (IP and port).
	Addr netip.AddrPort
	// Direction is our direction attribute.
	Direction Direction
	// Origin is written as is; the caller increments Version when the
	// description changes (RFC 3264 section 8).
	Origin Origin
}

// Answer builds the answer to offer for the stream st chose: one m= line
// per offered line (RFC 3264 section 6), the unused ones rejected with
// port 0; the chosen line carries the chosen codec and telephone-event
// under the offerer's payload types, a=ptime:20 and our direction
// narrowed by the offer's (an offer with a=sendonly gets a=recvonly).
func Answer(offer *Session, st Stream, l Local) *Session {
	ans := newSession(l)
	for i := range offer.Media {
		m := &offer.Media[i]
		if i != st.Index {
			rej := Media{Type: m.Type, Port: 0, Proto: m.Proto, Formats: m.Formats[:min(1, len(m.Formats))]}
			ans.Media = append(ans.Media, rej)
			continue
		}
		codecs := []Codec{st.Codec}
		if st.DTMF.Name != "" {
			codecs = append(codecs, st.DTMF)
		}
		dir := l.Direction.Intersect(st.Direction.Reverse())
		ans.Media = append(ans.Media, audioMedia(m.Proto, l.Addr.Port(), codecs, dir))
	}
	return ans
}

// Offer builds our offer: one audio m= line with codecs in order, our
// RTP address and direction.
func Offer(codecs []Codec, l Local) *Session {
	s := newSession(l)
	s.Media = append(s.Media, audioMedia("RTP/AVP", l.Addr.Port(), codecs, l.Direction))
	return s
}

func newSession(l Local) *Session {
	typ := "IP4"
	if l.Addr.Addr().Is6() && !l.Addr.Addr().Is4In6() {
		typ = "IP6"
	}
	o := l.Origin
	if o.Username == "" {
		o.Username = "-"
	}
	o.AddrType = typ
	if o.Address == "" {
		o.Address = l.Addr.Addr().Unmap().String()
	}
	return &Session{
		Origin:     o,
		Name:       "-",
		Connection: &Connection{AddrType: typ, Address: l.Addr.Addr().Unmap().String()},
		Timing:     []string{"0 0"},
	}
}

func audioMedia(proto string, port uint16, codecs []Codec, dir Direction) Media {
	m := Media{Type: "audio", Port: int(port), Proto: proto}
	for _, c := range codecs {
		m.Formats = append(m.Formats, strconv.Itoa(int(c.PT)))
	}
	for _, c := range codecs {
		m.Attributes = append(m.Attributes, Attribute{Key: "rtpmap", Value: c.rtpmap()})
		if f := fmtpFor(c); f != "" {
			m.Attributes = append(m.Attributes, Attribute{Key: "fmtp", Value: strconv.Itoa(int(c.PT)) + " " + f})
		}
	}
	m.Attributes = append(m.Attributes, Attribute{Key: "ptime", Value: "20"}, Attribute{Key: dir.String()})
	return m
}

// fmtpFor returns the fmtp we state for c: events 0-16 (the DTMF set we
// send and understand) for telephone-event, our receive parameters for
// Opus, the given parameters otherwise.
func fmtpFor(c Codec) string {
	switch {
	case c.IsDTMF():
		return "0-16"
	case strings.EqualFold(c.Name, "opus"):
		return Opus.Fmtp
	}
	return c.Fmtp
}
