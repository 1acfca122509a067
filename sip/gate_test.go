package sip

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/internal/torture"
)

// typicalInvite is an INVITE as phones and trunks send them.
const typicalInvite = "INVITE sip:+14155550100@198.51.100.7:5060 SIP/2.0\r\n" +
	"Via: SIP/2.0/UDP 203.0.113.9:5060;branch=z9hG4bK-524287-1---d8754z-;rport\r\n" +
	"Max-Forwards: 70\r\n" +
	"Contact: <sip:alice@203.0.113.9:5060;transport=udp>\r\n" +
	"To: <sip:+14155550100@198.51.100.7>\r\n" +
	"From: \"Alice\" <sip:alice@example.com>;tag=8a7d1f0c\r\n" +
	"Call-ID: NjU4ZGQ4ZTA2YjQ0ZWJmNzM0YjA0ZjE0OGE3YjE4N2Q\r\n" +
	"CSeq: 1 INVITE\r\n" +
	"Allow: INVITE, ACK, CANCEL, BYE, NOTIFY, REFER, MESSAGE, OPTIONS, INFO, SUBSCRIBE\r\n" +
	"Content-Type: application/sdp\r\n" +
	"Supported: replaces, norefersub, timer\r\n" +
	"User-Agent: Z 5.6.1 v2.10.20.1\r\n" +
	"Content-Length: 83\r\n\r\n" +
	"v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nc=IN IP4 1.2.3.4\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n"

// TestGatePassesGoodMessagesUntouched: a well-formed message is handed
// on as it is, with no allocation.
func TestGatePassesGoodMessagesUntouched(t *testing.T) {
	data := []byte(typicalInvite)
	r := inspect(data, false, &gateOpts{})
	require.Equal(t, gatePass, r.action, r.why)
	require.Equal(t, &data[0], &r.msg[0])
	require.Len(t, r.msg, len(data))
	require.Zero(t, testing.AllocsPerRun(1000, func() { inspect(data, false, &gateOpts{}) }))
}

// TestGateRewritesWhitespace: RFC 4475 wsinv reaches sipgo with the
// optional whitespace taken out, so its tags and branches parse.
func TestGateRewritesWhitespace(t *testing.T) {
	data, err := torture.Load("testdata/rfc4475", "wsinv")
	require.NoError(t, err)
	r := inspect(data, false, &gateOpts{})
	require.Equal(t, gatePass, r.action, r.why)
	msg, err := sip.NewParser().ParseSIP(r.msg)
	require.NoError(t, err)
	req := msg.(*sip.Request)
	tag, _ := req.To().Params.Get("tag")
	require.Equal(t, "1918181833n", tag)
	tag, _ = req.From().Params.Get("tag")
	require.Equal(t, "98asjd8", tag)
	vias := req.GetHeaders("Via")
	require.Len(t, vias, 3)
	require.Equal(t, "z9hG4bK9ikj8", vias[1].(*sip.ViaHeader).Params.GetOr("branch", ""))
	require.Equal(t, "z9hG4bK30239", vias[2].(*sip.ViaHeader).Params.GetOr("branch", ""))
	require.Equal(t, "0.33", req.Contact().Params.GetOr("q", ""))
	require.Equal(t, 150, len(req.Body()))
}

// TestGateRejects: what a refused request's response holds.
func TestGateRejects(t *testing.T) {
	data, err := torture.Load("testdata/rfc4475", "baddn")
	require.NoError(t, err)
	r := inspect(data, false, &gateOpts{userAgent: "voiced-test"})
	require.Equal(t, gateReject, r.action)
	res, err := sip.NewParser().ParseSIP(r.res)
	require.NoError(t, err)
	require.Equal(t, 400, res.(*sip.Response).StatusCode)
	require.Equal(t, 5060, r.port)
	require.False(t, r.rport)
	require.Contains(t, string(r.res), "Warning: 399 voiced \"From: has a display name that is not tokens or a quoted string\"\r\n")
	require.Contains(t, string(r.res), "Call-ID: baddn.31415@c.example.com\r\n")
	require.Contains(t, string(r.res), "Via: SIP/2.0/UDP c.example.com:5060;branch=z9hG4bKkdjuw\r\n")
	// To is copied as the request has it: it is the malformed one.
	require.Contains(t, string(r.res), "To: Watson, Thomas <sip:t.watson@example.org>\r\n")

	// An unquoted UTF-8 display name passes (not a comma: baddn).
	r = inspect([]byte(strings.Replace(typicalInvite, `"Alice"`, "Jos\u00e9 Garc\u00eda", 1)), false, &gateOpts{})
	require.Equal(t, gatePass, r.action, r.why)

	// So does an unquoted URN in a Contact parameter.
	r = inspect([]byte(strings.Replace(typicalInvite, ";transport=udp>", ";transport=udp>;+sip.instance=urn:uuid:00000000-0000-1000-8000-000A95A0E128", 1)), false, &gateOpts{})
	require.Equal(t, gatePass, r.action, r.why)

	// A well-formed To gets our tag.
	r = inspect([]byte(bytes.Replace([]byte(typicalInvite), []byte("CSeq: 1 INVITE"), []byte("CSeq: 1 BYE"), 1)), false, &gateOpts{})
	require.Equal(t, gateReject, r.action)
	require.Regexp(t, `\r\nTo: <sip:\+14155550100@198\.51\.100\.7>;tag=[0-9a-z]+\r\n`, string(r.res))
	require.True(t, r.rport)
}

// TestStreamFraming: a stream is cut into messages however its octets
// arrive; a ping gets its pong.
func TestStreamFraming(t *testing.T) {
	s := &Server{cfg: Config{}.withDefaults()}
	s.log = discardLogger()
	opts := typicalInvite
	stream := "\r\n\r\n" + opts + opts
	for _, chunk := range []int{1, 7, 100, len(stream)} {
		p := &pipeConn{in: []byte(stream), chunk: chunk}
		c := &gatedConn{Conn: p, s: s}
		var got []string
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			got = append(got, string(buf[:n]))
		}
		require.True(t, slices.Equal([]string{"\r\n\r\n", opts, opts}, got), "chunk %d: %q", chunk, got)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// pipeConn is a net.Conn that reads in from chunk octets at a time,
// then io.EOF, and records what is written.
type pipeConn struct {
	net.Conn
	in, out []byte
	chunk   int
}

func (p *pipeConn) Read(b []byte) (int, error) {
	if len(p.in) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.chunk)], p.in)
	p.in = p.in[n:]
	return n, nil
}

func (p *pipeConn) Write(b []byte) (int, error) { p.out = append(p.out, b...); return len(b), nil }

func (p *pipeConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5060} }

func (p *pipeConn) SetReadDeadline(time.Time) error { return nil }

// BenchmarkGate: the gate on a typical INVITE, and sipgo's parse of
// it for scale.
func BenchmarkGate(b *testing.B) {
	data := []byte(typicalInvite)
	b.Run("gate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			inspect(data, false, &gateOpts{})
		}
	})
	b.Run("sipgo-parse", func(b *testing.B) {
		p := sip.NewParser()
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			p.ParseSIP(data)
		}
	})
}

// TestStreamTooLarge: a message over the size limit closes the stream
// unanswered, however it arrives.
func TestStreamTooLarge(t *testing.T) {
	s := &Server{cfg: Config{}.withDefaults(), log: discardLogger()}
	s.lim = newLimiter(1, 1, 1, s.cfg.MaxMessageSize, nil, time.Now)
	huge := bytes.Replace([]byte(typicalInvite), []byte("Max-Forwards"), []byte("X-Junk: "+strings.Repeat("a", 20000)+"\r\nMax-Forwards"), 1)
	for _, chunk := range []int{1000, len(huge)} {
		p := &pipeConn{in: huge, chunk: chunk}
		c := &gatedConn{Conn: p, s: s}
		_, err := c.Read(make([]byte, 65536))
		require.ErrorIs(t, err, errTooLarge, "chunk %d", chunk)
		require.Empty(t, p.out)
	}
}
