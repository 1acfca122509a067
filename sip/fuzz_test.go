package sip

import (
	"bytes"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/internal/torture"
	"github.com/voiced/voiced/sip/sdp"
)

// FuzzSIPRequest parses arbitrary bytes as a SIP message with the
// parser and size limit the Server uses, then runs every piece of our
// code that reads a request from the network: dialog key, number
// normalization, Require check, session timer negotiation, the SDP
// offer, DTMF and sipfrag bodies. None may panic; normalized numbers
// stay normalized.
func FuzzSIPRequest(f *testing.F) {
	inv := "INVITE sip:+14155550100@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK-1\r\n" +
		"From: <sip:a@b>;tag=1\r\nTo: <sip:+14155550100@127.0.0.1>;tag=2\r\nCall-ID: x\r\nCSeq: 1 INVITE\r\n" +
		"Contact: <sip:a@127.0.0.1:5070>\r\nSupported: timer\r\nSession-Expires: 1800;refresher=uac\r\nMin-SE: 90\r\nRequire: timer\r\n" +
		"Content-Type: application/sdp\r\nContent-Length: 79\r\n\r\n" +
		"v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nc=IN IP4 1.2.3.4\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n"
	f.Add([]byte(inv))
	f.Add([]byte("INFO sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK2\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\n" +
		"Call-ID: y\r\nCSeq: 2 INFO\r\nContent-Type: application/dtmf-relay\r\nContent-Length: 24\r\n\r\nSignal=5\r\nDuration=160\r\n"))
	f.Add([]byte("NOTIFY sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK3\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\n" +
		"Call-ID: z\r\nCSeq: 3 NOTIFY\r\nEvent: refer\r\nContent-Length: 16\r\n\r\nSIP/2.0 200 OK\r\n"))
	f.Add([]byte("OPTIONS sip:x SIP/3.0\r\n\r\n"))
	s := &Server{cfg: Config{}.withDefaults()}
	parser := sip.NewParser()
	parser.MaxMessageLength = s.cfg.MaxMessageSize
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := parser.ParseSIP(data)
		if err != nil {
			return
		}
		req, ok := msg.(*sip.Request)
		if !ok {
			return
		}
		requestKey(req)
		n := Number(req.Recipient.User)
		require.Equal(t, n, Number(n), "Number is idempotent")
		unsupportedRequire(req)
		o := s.negotiateSE(req, 0)
		require.True(t, o.tooSmall || o.interval == 0 || o.interval >= s.cfg.MinSE || o.interval == s.cfg.SessionExpires)
		s.negotiateSE(req, 10*time.Minute)
		if body := req.Body(); len(body) > 0 {
			if off, err := sdp.Parse(body); err == nil {
				sdp.Select(off, sdp.Supported())
			}
			parseDTMFRelay(string(body))
			sipfragCode(body)
		}
	})
}

// FuzzGate runs the gate on arbitrary bytes as a datagram and as a
// framed stream message: it never panics, a message it passes
// rewritten still parses when the input did, and a refusal is a
// well-formed response.
func FuzzGate(f *testing.F) {
	for _, name := range []string{"wsinv", "intmeth", "esc01", "longreq", "dblreq", "mpart01", "unreason", "badinv01",
		"quotbal", "ltgtruri", "lwsruri", "trws", "baddn", "badaspec", "regbadct", "scalar02", "bigcode", "mcl01"} {
		data, err := torture.Load("testdata/rfc4475", name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	parser := sip.NewParser()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, stream := range []bool{false, true} {
			r := inspect(data, stream, &gateOpts{userAgent: "voiced"})
			switch r.action {
			case gatePass:
				if _, err := parser.ParseSIP(data); err == nil && &r.msg[0] != &data[0] {
					_, err := parser.ParseSIP(r.msg)
					require.NoError(t, err, "the rewrite broke a message sipgo parsed")
				}
			case gateReject:
				// It copies the request's headers, malformed or not:
				// only its own lines are checked.
				line, _, _ := bytes.Cut(r.res, []byte("\r\n"))
				require.Nil(t, checkStatusLine(line), "%q", r.res)
				require.True(t, bytes.HasSuffix(r.res, []byte("\r\nContent-Length: 0\r\n\r\n")), "%q", r.res)
			}
		}
		frameLen(data, 1<<16)
	})
}
