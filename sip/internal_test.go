package sip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"
)

func TestNumber(t *testing.T) {
	for in, want := range map[string]string{
		"+14155550100":                   "+14155550100",
		"14155550100":                    "+14155550100",
		"0014155550100":                  "+14155550100",
		"+1-415-555-0100":                "+14155550100",
		"+1 (415) 555.0100":              "+14155550100",
		"+14155550100;npdi;rn=+14155559": "+14155550100",
		"4155550100":                     "4155550100",
		"alice":                          "alice",
		"":                               "",
		"+":                              "+",
	} {
		require.Equal(t, want, Number(in), in)
	}
}

func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{ErrUnknownNumber, 404},
		{fmt.Errorf("admit: %w", ErrNoAgent), 480},
		{ErrNumberInactive, 480},
		{ErrInsufficientBalance, 480},
		{ErrNoCapacity, 503},
		{ErrSourceNotAllowed, 403},
		{errors.New("database down"), 500},
	} {
		code, phrase, text := refusal(tc.err)
		require.Equal(t, tc.code, code, tc.err.Error())
		require.NotEmpty(t, phrase)
		require.NotEmpty(t, text)
	}
	require.Equal(t, `SIP ;cause=480 ;text="no agent"`, reasonHeader(480, "no agent").Value())
}

func TestParseSE(t *testing.T) {
	d, ref, ok := parseSE("1800;refresher=UAC")
	require.True(t, ok)
	require.Equal(t, 1800*time.Second, d)
	require.Equal(t, "uac", ref)
	_, _, ok = parseSE("soon")
	require.False(t, ok)
	_, _, ok = parseSE("-4")
	require.False(t, ok)
}

func invite(hdrs ...string) *sip.Request {
	req := sip.NewRequest(sip.INVITE, sip.Uri{Scheme: "sip", User: "x", Host: "example.com"})
	for i := 0; i+1 < len(hdrs); i += 2 {
		req.AppendHeader(sip.NewHeader(hdrs[i], hdrs[i+1]))
	}
	return req
}

func TestNegotiateSE(t *testing.T) {
	s := &Server{cfg: Config{}.withDefaults()}
	for _, tc := range []struct {
		name string
		req  *sip.Request
		want seOffer
	}{
		{"peer asks, supports timer", invite("Supported", "timer", "Session-Expires", "600;refresher=uac"),
			seOffer{interval: 600 * time.Second, refresher: "uac", require: true}},
		{"peer supports, no refresher", invite("Supported", "100rel, timer", "Session-Expires", "600"),
			seOffer{interval: 600 * time.Second, refresher: "uac", require: true}},
		{"proxy inserted, peer unaware", invite("Session-Expires", "600;refresher=uac"),
			seOffer{interval: 600 * time.Second, refresher: "uas"}},
		{"too small", invite("Supported", "timer", "Session-Expires", "60"), seOffer{tooSmall: true}},
		{"none asked, peer supports", invite("Supported", "timer"),
			seOffer{interval: 1800 * time.Second, refresher: "uac", require: true}},
		{"none asked, peer's Min-SE wins", invite("Min-SE", "3600"),
			seOffer{interval: 3600 * time.Second, refresher: "uas"}},
		{"compact form", invite("k", "timer", "x", "900"), seOffer{interval: 900 * time.Second, refresher: "uac", require: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, s.negotiateSE(tc.req, 0))
		})
	}
	off := &Server{cfg: Config{SessionExpires: -1}.withDefaults()}
	require.Equal(t, seOffer{}, off.negotiateSE(invite(), 0))
	require.Equal(t, seOffer{interval: 120 * time.Second, refresher: "uas"}, off.negotiateSE(invite(), 120*time.Second), "a running timer is kept")
}

func TestUnsupportedRequire(t *testing.T) {
	require.Empty(t, unsupportedRequire(invite("Require", "timer")))
	require.Equal(t, "100rel, foo", unsupportedRequire(invite("Require", "100rel, timer, foo")))
}

func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimiter(10, 5, 2, 1500, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, func() time.Time { return now })
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for range 5 {
		require.True(t, l.allow(a))
	}
	require.False(t, l.allow(a), "burst spent")
	require.True(t, l.allow(b), "other sources have their own bucket")
	for range 100 {
		require.True(t, l.allow(netip.MustParseAddr("10.1.2.3")), "trusted sources are not limited")
	}
	now = now.Add(100 * time.Millisecond) // one token back at 10/s
	require.True(t, l.allow(a))
	require.False(t, l.allow(a))
	require.Equal(t, uint64(2), l.dropped.Load())
	// Full buckets are swept.
	now = now.Add(time.Minute)
	l.allow(netip.MustParseAddr("192.0.2.3"))
	require.Len(t, l.buckets, 1)

	require.True(t, l.openConn(a))
	require.True(t, l.openConn(a))
	require.False(t, l.openConn(a))
	l.closeConn(a)
	require.True(t, l.openConn(a))

	// The read filter: a big datagram is dropped, a big stream read is
	// left to the parser; over the rate, datagrams drop and streams close.
	udp := sip.TransportReadProps{Transport: "UDP", RemoteAddr: &net.UDPAddr{IP: net.ParseIP("192.0.2.9"), Port: 5060}}
	out, err := l.filter(udp, make([]byte, 2000))
	require.NoError(t, err)
	require.Nil(t, out)
	out, err = l.filter(udp, []byte("OPTIONS"))
	require.NoError(t, err)
	require.Equal(t, "OPTIONS", string(out))
	tcp := sip.TransportReadProps{Transport: "TCP", RemoteAddr: &net.TCPAddr{IP: net.ParseIP("192.0.2.9"), Port: 5060}}
	for range 10 {
		l.filter(tcp, []byte("x"))
	}
	_, err = l.filter(tcp, []byte("x"))
	require.ErrorIs(t, err, errFlood)
}

func TestSourceAllowed(t *testing.T) {
	ctx := context.Background()
	tr := InboundTrunk{Allowed: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, Host: "198.51.100.7", OutboundProxy: "localhost:5070"}
	r := net.DefaultResolver
	require.True(t, sourceAllowed(ctx, r, tr, netip.MustParseAddr("203.0.113.44")))
	require.True(t, sourceAllowed(ctx, r, tr, netip.MustParseAddr("198.51.100.7")))
	require.True(t, sourceAllowed(ctx, r, tr, netip.MustParseAddr("127.0.0.1")), "the proxy's name resolves")
	require.True(t, sourceAllowed(ctx, r, tr, netip.MustParseAddr("::ffff:203.0.113.1")), "mapped IPv4")
	require.False(t, sourceAllowed(ctx, r, tr, netip.MustParseAddr("192.0.2.1")))
	require.False(t, sourceAllowed(ctx, r, InboundTrunk{}, netip.MustParseAddr("192.0.2.1")))
}

func TestCodecsFor(t *testing.T) {
	names := func(n []string) []string {
		var out []string
		for _, c := range codecsFor(n) {
			out = append(out, fmt.Sprintf("%s/%d", c.Name, c.ClockRate))
		}
		return out
	}
	require.Equal(t, []string{"PCMU/8000", "PCMA/8000", "opus/48000", "telephone-event/8000", "telephone-event/48000"}, names(nil))
	require.Equal(t, []string{"PCMA/8000", "telephone-event/8000", "telephone-event/48000"}, names([]string{"pcma"}))
}

func TestAllG711(t *testing.T) {
	require.True(t, allG711(codecsFor([]string{"pcma"})), "PCMA with telephone-event")
	require.True(t, allG711(codecsFor([]string{"PCMU", "PCMA"})))
	require.False(t, allG711(codecsFor(nil)), "Opus is offered too")
	require.False(t, allG711(codecsFor([]string{"opus"})))
	require.False(t, allG711(nil), "no codec is no audio")
}

func TestTrunkTarget(t *testing.T) {
	tr, host, port, hop, err := Trunk{Host: "sip.example.com", Transport: "tls", OutboundProxy: "proxy.example.com"}.target()
	require.NoError(t, err)
	require.Equal(t, "TLS", tr)
	require.Equal(t, "sip.example.com", host)
	require.Equal(t, 5061, port)
	require.Equal(t, "proxy.example.com:5061", hop)
	_, _, _, hop, err = Trunk{Host: "10.0.0.1", Port: 5080}.target()
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1:5080", hop)
	for _, bad := range []Trunk{{}, {Host: "h", Transport: "sctp"}, {Host: "h", Port: 70000}} {
		_, _, _, _, err := bad.target()
		require.ErrorIs(t, err, ErrBadTrunk)
	}
}

func TestDTMFBodies(t *testing.T) {
	d, dur, err := parseDTMFRelay("Signal=5\r\nDuration=250\r\n")
	require.NoError(t, err)
	require.Equal(t, '5', d)
	require.Equal(t, 250*time.Millisecond, dur)
	d, _, err = parseDTMFRelay("signal= 11\n")
	require.NoError(t, err)
	require.Equal(t, '#', d)
	d, err = parseDigit("c")
	require.NoError(t, err)
	require.Equal(t, 'C', d)
	for _, bad := range []string{"Duration=100", "Signal=E", "Signal=55"} {
		_, _, err := parseDTMFRelay(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, 200, sipfragCode([]byte("SIP/2.0 200 OK\r\n")))
	require.Equal(t, 486, sipfragCode([]byte("SIP/2.0 486 Busy Here")))
	require.Zero(t, sipfragCode([]byte("hello")))
}

func TestQuietHandler(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	h := newQuietHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}), time.Second, func() time.Time { return now })
	log := slog.New(h)
	require.False(t, h.Enabled(context.Background(), slog.LevelInfo), "sipgo's info chatter is off")
	for range 100 {
		log.Error("failed to parse", "data", "INVITE secret stuff", "error", "bad")
	}
	now = now.Add(2 * time.Second)
	log.Error("failed to parse", "error", "bad")
	out := buf.String()
	require.Equal(t, 2, bytes.Count(buf.Bytes(), []byte("failed to parse")), out)
	require.Contains(t, out, "suppressed=99")
	require.NotContains(t, out, "secret")
}

// TestFilterAllocs: the per-datagram read filter allocates nothing for a
// known source.
func TestFilterAllocs(t *testing.T) {
	l := newLimiter(1e9, 1e9, 32, 16384, nil, time.Now)
	p := sip.TransportReadProps{Transport: "UDP", RemoteAddr: &net.UDPAddr{IP: net.ParseIP("192.0.2.7").To4(), Port: 5060}}
	data := []byte("OPTIONS sip:x SIP/2.0\r\n\r\n")
	l.filter(p, data)
	require.Zero(t, testing.AllocsPerRun(1000, func() { l.filter(p, data) }))
}

func BenchmarkFilter(b *testing.B) {
	l := newLimiter(1e9, 1e9, 32, 16384, nil, time.Now)
	p := sip.TransportReadProps{Transport: "UDP", RemoteAddr: &net.UDPAddr{IP: net.ParseIP("192.0.2.7").To4(), Port: 5060}}
	data := []byte("OPTIONS sip:x SIP/2.0\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		l.filter(p, data)
	}
}
