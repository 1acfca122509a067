package sip

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"
)

// gatedPacketConn runs the gate on every datagram before sipgo reads
// it: sipgo gets good messages (rewritten when its parser needs that),
// never sees refused ones, whose responses the gate sends itself.
type gatedPacketConn struct {
	net.PacketConn
	s *Server
}

func (c *gatedPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil || n == 0 {
			return n, addr, err
		}
		data := p[:n]
		// Oversized or cut datagrams are the read filter's to drop and
		// count; keep-alives (CRLF, NUL) sipgo skips.
		if n > c.s.cfg.MaxMessageSize || n >= len(p) || len(bytes.Trim(data, "\r\n\x00")) == 0 {
			return n, addr, nil
		}
		r := inspect(data, false, &c.s.gate)
		if r.action == gatePass {
			if len(r.msg) > len(p) {
				c.s.dropUnparseable(addr, "rewritten message too large")
				continue
			}
			return copy(p, r.msg), addr, nil
		}
		// sipgo's read filter never sees this datagram: take its token
		// from the source's bucket here.
		if !c.s.lim.allow(addrIP(addr)) {
			continue
		}
		if r.action == gateDrop {
			c.s.dropUnparseable(addr, r.why)
			continue
		}
		c.s.log.Debug("sip: refused a malformed request", "src", addr.String(), "why", r.why)
		dst := addr
		if ua, ok := addr.(*net.UDPAddr); ok && !r.rport {
			// RFC 3261 18.2.2: the source address, the Via's port.
			d := *ua
			d.Port = r.port
			if d.Port == 0 {
				d.Port = 5060
			}
			dst = &d
		}
		if _, err := c.PacketConn.WriteTo(r.res, dst); err != nil {
			c.s.log.Debug("sip: response to a malformed request not sent", "dst", dst.String(), "err", err)
		}
	}
}

// gatedListener hands sipgo connections whose reads come one whole,
// gated message at a time.
type gatedListener struct {
	net.Listener
	s *Server
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, s: l.s}, nil
}

// errTooLarge closes a stream whose message is over the size limit.
var errTooLarge = errors.New("sip: message over the size limit")

// gatedConn frames a stream into messages by Content-Length (RFC 3261
// 18.3), gates each, and hands sipgo the good ones. A message whose
// Content-Length cannot frame it gets its 400 and the stream is closed
// a moment later: nothing after it can be found.
type gatedConn struct {
	net.Conn
	s *Server

	mu   sync.Mutex // sipgo reads from one goroutine; this is for safety
	buf  []byte
	r, w int    // unread octets are buf[r:w]
	out  []byte // what the next Read returns
	err  error  // returned once buf and out are empty
	// discard: the stream lost its framing; what is read is dropped
	// until the read deadline closes it.
	discard bool
}

// unframeableGrace is how long a stream that lost its framing stays
// open, for the responses to the requests before the fault.
const unframeableGrace = time.Second

const streamReadSize = 16 << 10

func (c *gatedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if len(c.out) > 0 {
			n := copy(p, c.out)
			c.out = c.out[n:]
			return n, nil
		}
		if c.r < c.w {
			in := c.buf[c.r:c.w]
			// CRLFs between messages: keep-alives (RFC 5626 3.5.1),
			// each run handed on alone so sipgo answers a ping.
			// A partial run waits for the rest (a ping may arrive one
			// octet at a time).
			if k := crlfRun(in); k > 0 && (k == 4 || k < len(in)) {
				c.r += k
				c.out = in[:k]
				continue
			}
			total, fr := frameLen(in, c.s.cfg.MaxMessageSize)
			if in[0] == '\r' || in[0] == '\n' {
				fr = frameMore
			}
			switch fr {
			case frameTooLarge:
				// As sipgo's parser does over its MaxMessageLength:
				// the stream closes, counted with the size limit's.
				c.s.lim.dropped.Add(1)
				c.r, c.w = 0, 0
				c.err = errTooLarge
				continue
			case frameBad:
				// Nothing after this can be framed: answer it if we
				// can, give the requests before it a moment to be
				// answered, then close.
				c.r = c.w
				c.refuse(inspect(in[:headerEnd(in)], true, &c.s.gate))
				c.discard = true
				c.Conn.SetReadDeadline(time.Now().Add(unframeableGrace))
				continue
			case frameOK:
				c.r += total
				r := inspect(in[:total], true, &c.s.gate)
				if r.action == gatePass {
					c.out = r.msg
				} else {
					c.refuse(r)
				}
				continue
			}
		}
		if c.err != nil {
			return 0, c.err
		}
		if err := c.fill(); err != nil {
			c.err = err
			if c.discard {
				c.err = io.EOF
			}
		}
		if c.discard {
			c.r = c.w
		}
	}
}

// refuse answers a refused message on the stream, or counts a drop.
func (c *gatedConn) refuse(r gateResult) {
	if r.action == gateDrop || r.action == gatePass {
		c.s.dropUnparseable(c.RemoteAddr(), r.why)
		return
	}
	c.s.log.Debug("sip: refused a malformed request", "src", c.RemoteAddr().String(), "why", r.why)
	if _, err := c.Conn.Write(r.res); err != nil {
		c.s.log.Debug("sip: response to a malformed request not sent", "err", err)
	}
}

// fill reads more of the stream into buf.
func (c *gatedConn) fill() error {
	if c.r == c.w {
		c.r, c.w = 0, 0
	}
	if c.w == len(c.buf) {
		if c.r > 0 {
			c.w = copy(c.buf, c.buf[c.r:c.w])
			c.r = 0
		} else {
			if c.w > c.s.cfg.MaxMessageSize {
				return errTooLarge
			}
			nb := make([]byte, max(streamReadSize, 2*len(c.buf)))
			copy(nb, c.buf[:c.w])
			c.buf = nb
		}
	}
	n, err := c.Conn.Read(c.buf[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	return err
}

func crlfRun(b []byte) int {
	k := 0
	for k < len(b) && k < 4 && (b[k] == '\r' || b[k] == '\n') {
		k++
	}
	return k
}

// headerEnd is the length of the header section with its empty line,
// or len(b) when it is not complete.
func headerEnd(b []byte) int {
	if i := bytes.Index(b, crlfcrlf); i >= 0 {
		return i + 4
	}
	return len(b)
}

// frame results.
const (
	frameMore     = iota // incomplete
	frameOK              // a whole message of total octets
	frameBad             // Content-Length missing or not one number
	frameTooLarge        // over the size limit
)

// frameLen frames the message at the start of b.
func frameLen(b []byte, max int) (total, result int) {
	i := bytes.Index(b, crlfcrlf)
	if i < 0 {
		if len(b) > max {
			return 0, frameTooLarge
		}
		return 0, frameMore
	}
	cl := -1
	for line := range bytes.SplitSeq(b[:i], []byte("\r\n")) {
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || isWS(line[0]) || kindOf(bytes.TrimRight(line[:colon], " \t")) != hContentLength {
			continue
		}
		v := trimWS(line[colon+1:])
		if !isDigits(v) {
			return 0, frameBad
		}
		if !digitsBelow(v, uint64(max)) {
			return 0, frameTooLarge
		}
		n := 0
		for _, d := range v {
			n = n*10 + int(d-'0')
		}
		if cl >= 0 && cl != n {
			return 0, frameBad
		}
		cl = n
	}
	switch total = i + 4 + cl; {
	case cl < 0:
		return 0, frameBad
	case total > max:
		return 0, frameTooLarge
	case total > len(b):
		return 0, frameMore
	}
	return total, frameOK
}

func init() {
	// sipgo refuses to send any message over UDP within 200 octets of a
	// 1500-octet MTU. RFC 3261 puts that limit on requests only (18.1.1,
	// which would switch them to TCP); a response goes back over UDP
	// whatever its size (18.2.2), fragmented by IP, so a large request
	// (RFC 4475 longreq) still gets its 100 Trying and final response.
	// Our own requests are far smaller than 1300 octets.
	sip.UDPMTUSize = 65507 + 200
}
