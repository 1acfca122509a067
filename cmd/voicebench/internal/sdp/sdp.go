// Package sdp writes the one-stream audio offers and answers voicebench
// needs (RFC 4566, RFC 3264) and reads the connection address, port and
// codecs back from a peer's description. It is deliberately small: one
// audio m-line, IPv4, RTP/AVP.
package sdp

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Codec is an RTP audio payload format.
type Codec struct {
	Name     string // RTP encoding name as in a=rtpmap
	PT       uint8  // payload type
	Clock    int    // RTP clock rate, Hz
	Channels int    // channels in the rtpmap (Opus is always 2 there, RFC 7587)
}

// The codecs voicebench sends.
var (
	PCMU = Codec{Name: "PCMU", PT: 0, Clock: 8000, Channels: 1}
	PCMA = Codec{Name: "PCMA", PT: 8, Clock: 8000, Channels: 1}
	Opus = Codec{Name: "opus", PT: 111, Clock: 48000, Channels: 2}
)

// CodecByName returns PCMU, PCMA or Opus by name, case-insensitively.
func CodecByName(name string) (Codec, bool) {
	for _, c := range []Codec{PCMU, PCMA, Opus} {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Codec{}, false
}

// SamplesPerFrame returns the RTP timestamp advance of a 20 ms frame.
func (c Codec) SamplesPerFrame() int { return c.Clock / 50 }

// Write returns a description offering (or answering with) codecs on
// addr, with session id id. RFC 4566 requires CRLF line ends.
func Write(addr netip.AddrPort, id uint64, codecs ...Codec) string {
	var b strings.Builder
	ip := addr.Addr().String()
	fmt.Fprintf(&b, "v=0\r\no=voicebench %d 1 IN IP4 %s\r\ns=voicebench\r\nc=IN IP4 %s\r\nt=0 0\r\n", id, ip, ip)
	fmt.Fprintf(&b, "m=audio %d RTP/AVP", addr.Port())
	for _, c := range codecs {
		fmt.Fprintf(&b, " %d", c.PT)
	}
	b.WriteString("\r\n")
	for _, c := range codecs {
		if c.Channels > 1 {
			fmt.Fprintf(&b, "a=rtpmap:%d %s/%d/%d\r\n", c.PT, c.Name, c.Clock, c.Channels)
		} else {
			fmt.Fprintf(&b, "a=rtpmap:%d %s/%d\r\n", c.PT, c.Name, c.Clock)
		}
	}
	// RTCP multiplexed on the RTP port (RFC 5761), so a peer's reports
	// reach the socket we read instead of an unrelated port+1.
	b.WriteString("a=ptime:20\r\na=rtcp-mux\r\na=sendrecv\r\n")
	return b.String()
}

// Media is what a description says about its audio stream.
type Media struct {
	Addr   netip.AddrPort // where to send RTP
	Codecs []Codec        // in the m-line's order of preference
}

// Parse reads the first audio stream of a description. Static payload
// types without an rtpmap (0, 8) are known by number.
func Parse(s string) (Media, error) {
	var sessionIP, mediaIP netip.Addr
	var port int
	var pts []uint8
	maps := map[uint8]Codec{}
	inAudio, seenAudio := false, false
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if len(line) < 2 || line[1] != '=' {
			continue
		}
		val := line[2:]
		switch line[0] {
		case 'm':
			if seenAudio {
				inAudio = false
				continue
			}
			f := strings.Fields(val)
			if len(f) < 4 || f[0] != "audio" {
				inAudio = false
				continue
			}
			inAudio, seenAudio = true, true
			p, err := strconv.Atoi(f[1])
			if err != nil {
				return Media{}, fmt.Errorf("%w: bad port %q", ErrNoAudio, f[1])
			}
			port = p
			for _, pt := range f[3:] {
				n, err := strconv.ParseUint(pt, 10, 8)
				if err == nil {
					pts = append(pts, uint8(n))
				}
			}
		case 'c':
			f := strings.Fields(val)
			if len(f) < 3 || f[1] != "IP4" {
				continue
			}
			ip, err := netip.ParseAddr(strings.Split(f[2], "/")[0])
			if err != nil {
				continue
			}
			if inAudio {
				mediaIP = ip
			} else if !seenAudio {
				sessionIP = ip
			}
		case 'a':
			if !inAudio || !strings.HasPrefix(val, "rtpmap:") {
				continue
			}
			ptStr, enc, ok := strings.Cut(strings.TrimPrefix(val, "rtpmap:"), " ")
			n, err := strconv.ParseUint(ptStr, 10, 8)
			if !ok || err != nil {
				continue
			}
			parts := strings.Split(enc, "/")
			c := Codec{Name: parts[0], PT: uint8(n), Channels: 1}
			if len(parts) > 1 {
				c.Clock, _ = strconv.Atoi(parts[1])
			}
			if len(parts) > 2 {
				c.Channels, _ = strconv.Atoi(parts[2])
			}
			maps[c.PT] = c
		}
	}
	ip := mediaIP
	if !ip.IsValid() {
		ip = sessionIP
	}
	if !seenAudio || port == 0 || !ip.IsValid() {
		return Media{}, ErrNoAudio
	}
	m := Media{Addr: netip.AddrPortFrom(ip, uint16(port))}
	for _, pt := range pts {
		if c, ok := maps[pt]; ok {
			m.Codecs = append(m.Codecs, c)
			continue
		}
		switch pt {
		case 0:
			m.Codecs = append(m.Codecs, PCMU)
		case 8:
			m.Codecs = append(m.Codecs, PCMA)
		}
	}
	return m, nil
}

// Pick returns the first codec of the answer that is one of ours
// (matched by name and clock rate), with the answer's payload type.
// telephone-event and comfort noise are skipped.
func (m Media) Pick(ours ...Codec) (Codec, error) {
	for _, c := range m.Codecs {
		for _, o := range ours {
			if strings.EqualFold(c.Name, o.Name) && c.Clock == o.Clock {
				return c, nil
			}
		}
	}
	return Codec{}, ErrNoCodec
}
