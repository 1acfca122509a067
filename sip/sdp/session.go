package sdp

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Session is one SDP session description (RFC 4566 section 5). Lines we
// do not model (u=, e=, p=, r=, z=, k=) are kept in Other in input order
// and written after the t= lines.
type Session struct {
	// Origin is the o= line.
	Origin Origin
	// Name is the s= line; "-" when there is nothing to say.
	Name string
	// Info is the optional i= line.
	Info string
	// Connection is the session-level c= line; nil when every m= line
	// carries its own.
	Connection *Connection
	// Bandwidths are the b= lines, such as "AS:64", unparsed.
	Bandwidths []string
	// Timing holds the t= lines ("0 0" for a permanent session).
	Timing []string
	// Other holds unmodelled lines in order.
	Other []Line
	// Attributes are the session-level a= lines in order.
	Attributes []Attribute
	// Media are the m= sections in order. RFC 3264 matches offer and
	// answer streams by index.
	Media []Media
}

// Origin is the o= line: it names the session (Username, SessionID,
// Address) and versions it. RFC 3264 section 8: a new offer in the same
// session increments Version, an unchanged one repeats it.
type Origin struct {
	Username  string
	SessionID uint64
	Version   uint64
	// AddrType is "IP4" or "IP6".
	AddrType string
	// Address is the unicast address or host name of the originator.
	Address string
}

// Connection is a c= line: "IN IP4 192.0.2.1". Address is kept as
// written (it may carry a multicast /ttl suffix).
type Connection struct {
	// AddrType is "IP4" or "IP6".
	AddrType string
	Address  string
}

// Addr returns the connection address as an IP, false when it is a host
// name or a multicast group with a suffix.
func (c *Connection) Addr() (netip.Addr, bool) {
	if c == nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(c.Address)
	return a, err == nil
}

// Line is an SDP line kept as written: Type is the letter before '='.
type Line struct {
	Type  byte
	Value string
}

// Attribute is an a= line: "a=rtpmap:0 PCMU/8000" has Key "rtpmap" and
// Value "0 PCMU/8000"; a property attribute such as "a=sendrecv" has an
// empty Value.
type Attribute struct {
	Key   string
	Value string
}

// Media is one m= section.
type Media struct {
	// Type is "audio", "video", "application"...
	Type string
	// Port is the transport port; 0 rejects or disables the stream.
	Port int
	// NumPorts is the optional "/n" after the port; 0 when absent.
	NumPorts int
	// Proto is "RTP/AVP", "RTP/SAVP", "UDP/TLS/RTP/SAVPF"...
	Proto string
	// Formats are the media formats: RTP payload type numbers for RTP
	// transports.
	Formats []string
	// Info is the optional i= line.
	Info string
	// Connection is the media-level c= line, which overrides the
	// session's; nil when absent.
	Connection *Connection
	// Bandwidths are the b= lines, unparsed.
	Bandwidths []string
	// Other holds unmodelled lines (k=) in order.
	Other []Line
	// Attributes are the media-level a= lines in order.
	Attributes []Attribute
}

// Attr returns the value of the first session attribute named key.
func (s *Session) Attr(key string) (string, bool) { return findAttr(s.Attributes, key) }

// Attr returns the value of the first media attribute named key.
func (m *Media) Attr(key string) (string, bool) { return findAttr(m.Attributes, key) }

func findAttr(as []Attribute, key string) (string, bool) {
	for _, a := range as {
		if strings.EqualFold(a.Key, key) {
			return a.Value, true
		}
	}
	return "", false
}

// Parse reads one session description. It returns an error wrapping
// ErrSyntax, with the line number, when b is not SDP.
func Parse(b []byte) (*Session, error) {
	s := &Session{}
	var m *Media
	seen := [4]bool{} // v, o, s, t
	n := 0
	for len(b) > 0 {
		n++
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			if len(b) == 0 || len(bytes.TrimSpace(b)) == 0 {
				break // trailing blank lines
			}
			return nil, fmt.Errorf("%w: line %d: empty line", ErrSyntax, n)
		}
		if len(line) < 2 || line[1] != '=' || line[0] < 'a' || line[0] > 'z' {
			return nil, fmt.Errorf("%w: line %d: not a type=value line", ErrSyntax, n)
		}
		typ, val := line[0], string(line[2:])
		if n == 1 && typ != 'v' {
			return nil, fmt.Errorf("%w: line 1: the description must start with v=", ErrSyntax)
		}
		var err error
		switch typ {
		case 'v':
			if n != 1 || val != "0" {
				return nil, fmt.Errorf("%w: line %d: want v=0 as the first line", ErrSyntax, n)
			}
			seen[0] = true
		case 'o':
			if seen[1] || m != nil {
				return nil, fmt.Errorf("%w: line %d: misplaced o= line", ErrSyntax, n)
			}
			s.Origin, err = parseOrigin(val)
			seen[1] = true
		case 's':
			if seen[2] || m != nil {
				return nil, fmt.Errorf("%w: line %d: misplaced s= line", ErrSyntax, n)
			}
			s.Name, seen[2] = val, true
		case 't':
			if m != nil {
				return nil, fmt.Errorf("%w: line %d: t= inside a media section", ErrSyntax, n)
			}
			if f := strings.Fields(val); len(f) != 2 || !digits(f[0]) || !digits(f[1]) {
				return nil, fmt.Errorf("%w: line %d: want t=<start> <stop>", ErrSyntax, n)
			}
			s.Timing, seen[3] = append(s.Timing, val), true
		case 'i':
			if m != nil {
				m.Info = val
			} else {
				s.Info = val
			}
		case 'c':
			var c *Connection
			if c, err = parseConnection(val); err == nil {
				if m != nil {
					m.Connection = c
				} else {
					s.Connection = c
				}
			}
		case 'b':
			if !strings.Contains(val, ":") {
				return nil, fmt.Errorf("%w: line %d: want b=<type>:<bandwidth>", ErrSyntax, n)
			}
			if m != nil {
				m.Bandwidths = append(m.Bandwidths, val)
			} else {
				s.Bandwidths = append(s.Bandwidths, val)
			}
		case 'a':
			k, v, _ := strings.Cut(val, ":")
			if k == "" {
				return nil, fmt.Errorf("%w: line %d: empty attribute", ErrSyntax, n)
			}
			if m != nil {
				m.Attributes = append(m.Attributes, Attribute{Key: k, Value: v})
			} else {
				s.Attributes = append(s.Attributes, Attribute{Key: k, Value: v})
			}
		case 'm':
			var md Media
			if md, err = parseMedia(val); err == nil {
				s.Media = append(s.Media, md)
				m = &s.Media[len(s.Media)-1]
			}
		default:
			if m != nil {
				m.Other = append(m.Other, Line{Type: typ, Value: val})
			} else {
				s.Other = append(s.Other, Line{Type: typ, Value: val})
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrSyntax, n, err)
		}
		// Media pointers are invalidated by append; keep m current.
		if len(s.Media) > 0 {
			m = &s.Media[len(s.Media)-1]
		}
	}
	for i, name := range [4]string{"v=", "o=", "s=", "t="} {
		if !seen[i] {
			return nil, fmt.Errorf("%w: no %s line", ErrSyntax, name)
		}
	}
	return s, nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// token reports whether s is a non-empty run of visible characters.
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func parseOrigin(v string) (Origin, error) {
	f := strings.Fields(v)
	if len(f) != 6 {
		return Origin{}, fmt.Errorf("want o=<username> <sess-id> <sess-version> IN <addrtype> <address>")
	}
	id, err1 := strconv.ParseUint(f[1], 10, 64)
	ver, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Origin{}, fmt.Errorf("session id and version must be numbers")
	}
	if f[3] != "IN" {
		return Origin{}, fmt.Errorf("network type %q is not IN", f[3])
	}
	if f[4] != "IP4" && f[4] != "IP6" {
		return Origin{}, fmt.Errorf("address type %q is not IP4 or IP6", f[4])
	}
	return Origin{Username: f[0], SessionID: id, Version: ver, AddrType: f[4], Address: f[5]}, nil
}

func parseConnection(v string) (*Connection, error) {
	f := strings.Fields(v)
	if len(f) != 3 || f[0] != "IN" || (f[1] != "IP4" && f[1] != "IP6") {
		return nil, fmt.Errorf("want c=IN IP4|IP6 <address>")
	}
	return &Connection{AddrType: f[1], Address: f[2]}, nil
}

func parseMedia(v string) (Media, error) {
	f := strings.Fields(v)
	if len(f) < 4 {
		return Media{}, fmt.Errorf("want m=<media> <port> <proto> <fmt> ...")
	}
	md := Media{Type: f[0], Proto: f[2]}
	port, num, hasNum := strings.Cut(f[1], "/")
	p, err := strconv.Atoi(port)
	if err != nil || !digits(port) || p > 65535 {
		return Media{}, fmt.Errorf("port %q is not 0-65535", f[1])
	}
	md.Port = p
	if hasNum {
		k, err := strconv.Atoi(num)
		if err != nil || !digits(num) || k < 1 || k > 65535 {
			return Media{}, fmt.Errorf("port count %q is not a positive number", num)
		}
		md.NumPorts = k
	}
	if !token(md.Type) || !token(md.Proto) {
		return Media{}, fmt.Errorf("bad media type or protocol")
	}
	rtp := strings.Contains(md.Proto, "RTP/")
	for _, fm := range f[3:] {
		if rtp {
			pt, err := strconv.Atoi(fm)
			if err != nil || !digits(fm) || pt > 127 {
				return Media{}, fmt.Errorf("payload type %q is not 0-127", fm)
			}
		}
		md.Formats = append(md.Formats, fm)
	}
	return md, nil
}

// Bytes returns the description as SDP text with CRLF line ends.
func (s *Session) Bytes() []byte { return s.AppendTo(make([]byte, 0, 512)) }

// AppendTo appends the description as SDP text to dst and returns the
// extended slice. Lines come in RFC 4566 section 5 order.
func (s *Session) AppendTo(dst []byte) []byte {
	line := func(t byte, v string) {
		dst = append(dst, t, '=')
		dst = append(dst, v...)
		dst = append(dst, '\r', '\n')
	}
	dst = append(dst, "v=0\r\n"...)
	o := s.Origin
	if o.Username == "" {
		o.Username = "-"
	}
	if o.AddrType == "" {
		o.AddrType = "IP4"
	}
	dst = append(dst, "o="...)
	dst = append(dst, o.Username...)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, o.SessionID, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, o.Version, 10)
	dst = append(dst, " IN "...)
	dst = append(dst, o.AddrType...)
	dst = append(dst, ' ')
	dst = append(dst, o.Address...)
	dst = append(dst, '\r', '\n')
	name := s.Name
	if name == "" {
		name = "-"
	}
	line('s', name)
	if s.Info != "" {
		line('i', s.Info)
	}
	if c := s.Connection; c != nil {
		line('c', "IN "+c.AddrType+" "+c.Address)
	}
	for _, b := range s.Bandwidths {
		line('b', b)
	}
	if len(s.Timing) == 0 {
		line('t', "0 0")
	}
	for _, t := range s.Timing {
		line('t', t)
	}
	for _, l := range s.Other {
		line(l.Type, l.Value)
	}
	dst = appendAttrs(dst, s.Attributes)
	for i := range s.Media {
		m := &s.Media[i]
		dst = append(dst, "m="...)
		dst = append(dst, m.Type...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(m.Port), 10)
		if m.NumPorts > 0 {
			dst = append(dst, '/')
			dst = strconv.AppendInt(dst, int64(m.NumPorts), 10)
		}
		dst = append(dst, ' ')
		dst = append(dst, m.Proto...)
		for _, f := range m.Formats {
			dst = append(dst, ' ')
			dst = append(dst, f...)
		}
		dst = append(dst, '\r', '\n')
		if m.Info != "" {
			line('i', m.Info)
		}
		if c := m.Connection; c != nil {
			line('c', "IN "+c.AddrType+" "+c.Address)
		}
		for _, b := range m.Bandwidths {
			line('b', b)
		}
		for _, l := range m.Other {
			line(l.Type, l.Value)
		}
		dst = appendAttrs(dst, m.Attributes)
	}
	return dst
}

func appendAttrs(dst []byte, as []Attribute) []byte {
	for _, a := range as {
		dst = append(dst, "a="...)
		dst = append(dst, a.Key...)
		if a.Value != "" {
			dst = append(dst, ':')
			dst = append(dst, a.Value...)
		}
		dst = append(dst, '\r', '\n')
	}
	return dst
}
