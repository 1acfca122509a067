package sip_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	gosip "github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/digest"
	"github.com/voiced/voiced/sip/sdp"
	"github.com/voiced/voiced/sip/siptest"
)

// peer is a sipgo user agent playing the other side: a phone calling us
// or a trunk we call.
type peer struct {
	ua     *sipgo.UserAgent
	client *sipgo.Client
	srv    *sipgo.Server
	addr   netip.AddrPort
	dua    *sipgo.DialogUA
	media  *net.UDPConn
}

// newPeer starts a peer on loopback UDP; setup registers its handlers
// before it serves.
func newPeer(t testing.TB, tlsConf *tls.Config, setup func(*peer)) *peer {
	t.Helper()
	opts := []sipgo.UserAgentOption{sipgo.WithUserAgent("peer")}
	if tlsConf != nil {
		opts = append(opts, sipgo.WithUserAgenTLSConfig(tlsConf))
	}
	ua, err := sipgo.NewUA(opts...)
	require.NoError(t, err)
	srv, err := sipgo.NewServer(ua)
	require.NoError(t, err)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &peer{ua: ua, srv: srv, addr: pc.LocalAddr().(*net.UDPAddr).AddrPort()}
	p.client, err = sipgo.NewClient(ua, sipgo.WithClientHostname("127.0.0.1"), sipgo.WithClientPort(int(p.addr.Port())),
		sipgo.WithClientConnectionAddr(p.addr.String()))
	require.NoError(t, err)
	p.dua = &sipgo.DialogUA{Client: p.client, ContactHDR: gosip.ContactHeader{Address: gosip.Uri{Scheme: "sip", User: "peer", Host: "127.0.0.1", Port: int(p.addr.Port())}}}
	p.media, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	if setup != nil {
		setup(p)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeUDP(pc)
	}()
	require.Eventually(t, func() bool {
		c, err := ua.TransportLayer().GetConnection("udp", p.addr.String())
		return err == nil && c != nil
	}, 2*time.Second, time.Millisecond)
	t.Cleanup(func() {
		pc.Close()
		<-done
		ua.Close()
		p.media.Close()
	})
	return p
}

func (p *peer) sdp(version uint64) []byte {
	l := sdp.Local{Addr: p.media.LocalAddr().(*net.UDPAddr).AddrPort(), Origin: sdp.Origin{Username: "peer", SessionID: 7, Version: version}}
	return sdp.Offer([]sdp.Codec{sdp.PCMU, sdp.TelephoneEvent8k}, l).Bytes()
}

func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

// TestTLSCall: a phone calls over TLS; the call is answered and hung up
// by the phone.
func TestTLSCall(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	conf, pool := selfSigned(t)
	tlsAddr, err := e.srv.ListenTLS("127.0.0.1:0", conf)
	require.NoError(t, err)
	p := newPeer(t, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, nil)
	dua := &sipgo.DialogUA{Client: p.client, ContactHDR: gosip.ContactHeader{Address: gosip.Uri{Scheme: "sip", User: "peer", Host: "127.0.0.1", Port: 5999,
		UriParams: gosip.HeaderParams{{K: "transport", V: "tls"}}}}}
	client, err := sipgo.NewClient(p.ua, sipgo.WithClientHostname("127.0.0.1"))
	require.NoError(t, err)
	dua.Client = client
	uri := gosip.Uri{Scheme: "sip", User: agentNumber, Host: "127.0.0.1", Port: int(tlsAddr.Port()), UriParams: gosip.HeaderParams{{K: "transport", V: "tls"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	sess, err := dua.Invite(ctx, uri, p.sdp(1), gosip.NewHeader("Content-Type", "application/sdp"))
	require.NoError(t, err)
	require.NoError(t, sess.WaitAnswer(ctx, sipgo.AnswerOptions{}))
	t.Logf("INVITE to 200 OK over TLS: %v", time.Since(start))
	require.Contains(t, string(sess.InviteResponse.Body()), "m=audio")
	require.Contains(t, sess.InviteResponse.Contact().Address.String(), "transport=tls")
	require.NoError(t, sess.Ack(ctx))
	require.NoError(t, sess.Bye(ctx))
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.StatusCompleted, end.Status)
	require.Equal(t, sip.ReasonCallerHangup, end.Reason)
	a := <-e.arrivals
	require.Equal(t, "TLS", a.Transport)
}

type trunks map[string]sip.InboundTrunk

func (m trunks) InboundTrunk(_ context.Context, n string) (sip.InboundTrunk, bool, error) {
	t, ok := m[n]
	return t, ok, nil
}

// TestTrunkSources: a number on a VoIP connection accepts calls from its
// allowed addresses only (403 otherwise), and only its codecs.
func TestTrunkSources(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{AnswerDelay: 10 * time.Second}, trunks{agentNumber: {Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.5/32")}, Codecs: []string{"PCMA"}}})
	call := func(from string) int {
		msg := func(l string) string {
			body := "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0 8\r\n"
			return "INVITE sip:" + agentNumber + "@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP " + l + ";branch=z9hG4bK-" + from + "\r\n" +
				"From: <sip:x@example.com>;tag=a\r\nTo: <sip:" + agentNumber + "@example.com>\r\nCall-ID: src-" + from + "@test\r\nCSeq: 1 INVITE\r\n" +
				"Contact: <sip:x@" + l + ">\r\nContent-Type: application/sdp\r\nMax-Forwards: 70\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		}
		return exchangeUDP(t, from, e.udp.String(), msg, 2*time.Second)
	}
	require.Equal(t, 403, call("127.0.0.4"))
	require.Equal(t, 180, call("127.0.0.5"), "the allowed source rings")
	require.Len(t, e.media.Sessions(), 1)
	// The phone is gone (the test socket closed): Close ends the ringing
	// call rather than waiting out 200 OK retransmissions.
	e.srv.Close()
	end := e.log.Wait(t, 1, 5*time.Second)
	require.Equal(t, sip.StatusFailed, end.Status)
	require.Equal(t, sip.ReasonShutdown, end.Reason)
}

// TestOfferlessInvite: an INVITE without SDP gets our offer in the 200
// OK; the answer in the ACK starts media.
func TestOfferlessInvite(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := newPeer(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess, err := p.dua.Invite(ctx, gosip.Uri{Scheme: "sip", User: agentNumber, Host: "127.0.0.1", Port: int(e.udp.Port())}, nil)
	require.NoError(t, err)
	require.NoError(t, sess.WaitAnswer(ctx, sipgo.AnswerOptions{}))
	offer, err := sdp.Parse(sess.InviteResponse.Body())
	require.NoError(t, err)
	st, err := sdp.Select(offer, []sdp.Codec{sdp.PCMA, sdp.TelephoneEvent8k})
	require.NoError(t, err)
	ans := sdp.Answer(offer, st, sdp.Local{Addr: p.media.LocalAddr().(*net.UDPAddr).AddrPort(), Origin: sdp.Origin{SessionID: 9, Version: 1}})
	ack := gosip.NewRequest(gosip.ACK, sess.InviteResponse.Contact().Address)
	ack.AppendHeader(gosip.NewHeader("Content-Type", "application/sdp"))
	ack.SetBody(ans.Bytes())
	require.NoError(t, sess.WriteAck(ctx, ack))
	var s *siptest.EchoSession
	require.Eventually(t, func() bool {
		s = e.media.Session(1)
		return s != nil && len(s.Updates()) == 1
	}, 3*time.Second, 5*time.Millisecond)
	require.Equal(t, "PCMA", s.Updates()[0].Codec.Name)
	require.NoError(t, sess.Bye(ctx))
	e.log.Wait(t, 1, 5*time.Second)
}

// options sends an OPTIONS probe (as a dispatcher's keepalive) and
// returns the answer.
func (p *peer) options(t *testing.T, ctx context.Context, to netip.AddrPort) *gosip.Response {
	t.Helper()
	req := gosip.NewRequest(gosip.OPTIONS, gosip.Uri{Scheme: "sip", Host: to.Addr().String(), Port: int(to.Port())})
	res, err := p.client.Do(ctx, req)
	require.NoError(t, err)
	return res
}

// TestCapacity: over MaxCalls, INVITEs get 503 with Retry-After and are
// not admitted, and OPTIONS probes get 503 too, so a dispatcher in front
// sends calls elsewhere until a call ends.
func TestCapacity(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{MaxCalls: 1, AnswerDelay: 2 * time.Second}, nil)
	p := newPeer(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Equal(t, 200, p.options(t, ctx, e.udp).StatusCode)
	uri := gosip.Uri{Scheme: "sip", User: agentNumber, Host: "127.0.0.1", Port: int(e.udp.Port())}
	first, err := p.dua.Invite(ctx, uri, p.sdp(1), gosip.NewHeader("Content-Type", "application/sdp"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.srv.ActiveCalls() == 1 }, 2*time.Second, 5*time.Millisecond)
	full := p.options(t, ctx, e.udp)
	require.Equal(t, 503, full.StatusCode)
	require.NotNil(t, full.GetHeader("Retry-After"))
	require.Contains(t, full.GetHeader("Reason").Value(), "no capacity")
	second, err := p.dua.Invite(ctx, uri, p.sdp(1), gosip.NewHeader("Content-Type", "application/sdp"))
	require.NoError(t, err)
	err = second.WaitAnswer(ctx, sipgo.AnswerOptions{})
	var de *sipgo.ErrDialogResponse
	require.ErrorAs(t, err, &de)
	require.Equal(t, 503, de.Res.StatusCode)
	require.NotNil(t, de.Res.GetHeader("Retry-After"))
	require.Contains(t, de.Res.GetHeader("Reason").Value(), "no capacity")
	require.NoError(t, first.WaitAnswer(ctx, sipgo.AnswerOptions{}))
	require.NoError(t, first.Ack(ctx))
	require.NoError(t, first.Bye(ctx))
	e.log.Wait(t, 1, 5*time.Second)
	require.Len(t, e.media.Sessions(), 1)
	require.Eventually(t, func() bool { return e.srv.ActiveCalls() == 0 }, 2*time.Second, 5*time.Millisecond)
	require.Equal(t, 200, p.options(t, ctx, e.udp).StatusCode, "a free slot: the node takes calls again")
}

// TestDrainOptions: once Shutdown begins, OPTIONS gets 503 with
// Retry-After and a new INVITE 503, while the call in progress runs on
// until its caller hangs up, and Shutdown returns without cutting it.
func TestDrainOptions(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{}, nil)
	p := newPeer(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	uri := gosip.Uri{Scheme: "sip", User: agentNumber, Host: "127.0.0.1", Port: int(e.udp.Port())}
	call, err := p.dua.Invite(ctx, uri, p.sdp(1), gosip.NewHeader("Content-Type", "application/sdp"))
	require.NoError(t, err)
	require.NoError(t, call.WaitAnswer(ctx, sipgo.AnswerOptions{}))
	require.NoError(t, call.Ack(ctx))
	shut := make(chan error, 1)
	go func() { shut <- e.srv.Shutdown(ctx) }()
	require.Eventually(t, func() bool { return p.options(t, ctx, e.udp).StatusCode == 503 }, 2*time.Second, 10*time.Millisecond)
	res := p.options(t, ctx, e.udp)
	require.NotNil(t, res.GetHeader("Retry-After"))
	require.Contains(t, res.GetHeader("Reason").Value(), "shutting down")
	second, err := p.dua.Invite(ctx, uri, p.sdp(1), gosip.NewHeader("Content-Type", "application/sdp"))
	require.NoError(t, err)
	var de *sipgo.ErrDialogResponse
	require.ErrorAs(t, second.WaitAnswer(ctx, sipgo.AnswerOptions{}), &de)
	require.Equal(t, 503, de.Res.StatusCode)
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned with a call up: %v", err)
	default:
	}
	require.NoError(t, call.Bye(ctx), "the call in progress still runs")
	require.NoError(t, <-shut, "no call cut")
	require.Equal(t, sip.ReasonCallerHangup, e.log.Wait(t, 1, 5*time.Second).Reason)
}

// trunkUAS is a trunk that wants REGISTER and challenges everything
// with SHA-256 and MD5 (RFC 8760: strongest first), answers the
// authenticated INVITE and hangs up after hold.
type trunkUAS struct {
	*peer
	t        *testing.T
	mu       sync.Mutex
	algs     []string
	register int
	expires  []string
	dialogs  *sipgo.DialogServerCache
	hold     time.Duration
}

func newTrunkUAS(t *testing.T, hold time.Duration) *trunkUAS {
	u := &trunkUAS{t: t, hold: hold}
	u.peer = newPeer(t, nil, u.setup)
	return u
}

func (u *trunkUAS) setup(p *peer) {
	u.peer = p
	u.dialogs = sipgo.NewDialogServerCache(u.client, u.dua.ContactHDR)
	u.srv.OnRegister(func(req *gosip.Request, tx gosip.ServerTransaction) {
		if !u.authorized(req, tx, "Authorization", 401) {
			return
		}
		u.mu.Lock()
		u.register++
		if h := req.GetHeader("Expires"); h != nil {
			u.expires = append(u.expires, h.Value())
		}
		u.mu.Unlock()
		res := gosip.NewResponseFromRequest(req, 200, "OK", nil)
		res.AppendHeader(gosip.NewHeader("Expires", "60"))
		tx.Respond(res)
	})
	u.srv.OnInvite(func(req *gosip.Request, tx gosip.ServerTransaction) {
		if !u.authorized(req, tx, "Proxy-Authorization", 407) {
			return
		}
		dlg, err := u.dialogs.ReadInvite(req, tx)
		if err != nil {
			return
		}
		offer, err := sdp.Parse(req.Body())
		if err != nil {
			dlg.Respond(400, "Bad SDP", nil)
			return
		}
		st, err := sdp.Select(offer, sdp.Supported())
		if err != nil {
			dlg.Respond(488, "Not Acceptable Here", nil)
			return
		}
		ans := sdp.Answer(offer, st, sdp.Local{Addr: u.media.LocalAddr().(*net.UDPAddr).AddrPort(), Origin: sdp.Origin{SessionID: 3, Version: 1}})
		if err := dlg.RespondSDP(ans.Bytes()); err != nil {
			return
		}
		time.Sleep(u.hold)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dlg.Bye(ctx)
	})
	u.srv.OnAck(func(req *gosip.Request, tx gosip.ServerTransaction) { u.dialogs.ReadAck(req, tx) })
	u.srv.OnBye(func(req *gosip.Request, tx gosip.ServerTransaction) { u.dialogs.ReadBye(req, tx) })
}

func (u *trunkUAS) authorized(req *gosip.Request, tx gosip.ServerTransaction, hdr string, code int) bool {
	h := req.GetHeader(hdr)
	if h == nil {
		res := gosip.NewResponseFromRequest(req, code, "Authenticate", nil)
		chal := "WWW-Authenticate"
		if code == 407 {
			chal = "Proxy-Authenticate"
		}
		res.AppendHeader(gosip.NewHeader(chal, `Digest realm="trunk.test", nonce="n-`+string(req.Method)+`", algorithm=SHA-256, qop="auth"`))
		res.AppendHeader(gosip.NewHeader(chal, `Digest realm="trunk.test", nonce="n-`+string(req.Method)+`", algorithm=MD5, qop="auth"`))
		tx.Respond(res)
		return false
	}
	cr, err := digest.ParseCredentials(h.Value())
	if err != nil || cr.Username != "bob" || cr.URI != req.Recipient.String() || !cr.Verify(string(req.Method), "hunter2") {
		tx.Respond(gosip.NewResponseFromRequest(req, 403, "Forbidden", nil))
		return false
	}
	u.mu.Lock()
	u.algs = append(u.algs, cr.Algorithm)
	u.mu.Unlock()
	return true
}

// TestOutboundSHA256Register: a trunk that needs REGISTER and digest
// (offering SHA-256 and MD5): we register once, authenticate the INVITE
// with SHA-256 and the callee's BYE ends the call.
func TestOutboundSHA256Register(t *testing.T) {
	siptest.CheckLeaks(t)
	u := newTrunkUAS(t, 300*time.Millisecond) // first: cleaned up last, after our unregister
	e := newEnv(t, sip.Config{}, nil)
	tr := sip.Trunk{Host: "127.0.0.1", Port: int(u.addr.Port()), Username: "bob", Password: "hunter2", Register: true}
	for _, id := range []int64{801, 802} {
		require.NoError(t, e.srv.Dial(context.Background(), sip.OutboundCall{CallID: id, From: agentNumber, To: "+14155550123", Trunk: tr}))
		end := e.log.Wait(t, id, 5*time.Second)
		require.Equal(t, sip.StatusCompleted, end.Status, end.Detail)
		require.Equal(t, sip.ReasonCalleeHangup, end.Reason)
	}
	u.mu.Lock()
	require.Equal(t, 1, u.register, "the registration is reused")
	require.Equal(t, []string{"SHA-256", "SHA-256", "SHA-256"}, u.algs)
	u.mu.Unlock()

	// A wrong password: the call fails with the trunk's 403.
	tr.Password = "wrong"
	tr.Register = false
	require.NoError(t, e.srv.Dial(context.Background(), sip.OutboundCall{CallID: 803, From: agentNumber, To: "+14155550123", Trunk: tr}))
	end := e.log.Wait(t, 803, 5*time.Second)
	require.Equal(t, sip.StatusFailed, end.Status)
	require.Equal(t, 403, end.Code)
	require.True(t, strings.Contains(end.Detail, "403"), end.Detail)

	// Closing the server removes the binding.
	e.srv.Close()
	u.mu.Lock()
	require.Equal(t, []string{"3600", "0"}, u.expires)
	u.mu.Unlock()
}

// BenchmarkCall measures one inbound call's signalling over loopback UDP
// against a sipgo phone: INVITE to 200 OK (reported as invite-200-us),
// then ACK and BYE to the recorded end.
func BenchmarkCall(b *testing.B) {
	// The phone sends thousands of messages a second: trust it.
	e := newEnv(b, sip.Config{Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, nil)
	p := newPeer(b, nil, nil)
	uri := gosip.Uri{Scheme: "sip", User: agentNumber, Host: "127.0.0.1", Port: int(e.udp.Port())}
	ctx := context.Background()
	var answer time.Duration
	n := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		sess, err := p.dua.Invite(ctx, uri, p.sdp(1), gosip.NewHeader("Content-Type", "application/sdp"))
		if err != nil {
			b.Fatal(err)
		}
		if err := sess.WaitAnswer(ctx, sipgo.AnswerOptions{}); err != nil {
			b.Fatal(err)
		}
		answer += time.Since(start)
		if err := sess.Ack(ctx); err != nil {
			b.Fatal(err)
		}
		if err := sess.Bye(ctx); err != nil {
			b.Fatal(err)
		}
		n++
		e.log.Wait(b, n, 5*time.Second)
	}
	b.ReportMetric(float64(answer.Microseconds())/float64(n), "invite-200-us")
}

// TestCancelRace: a phone CANCELs right after its INVITE, racing our
// answer. Whichever wins, each call ends exactly once, a call that was
// answered is hung up cleanly, and nothing is left running.
func TestCancelRace(t *testing.T) {
	siptest.CheckLeaks(t)
	// Ringing for a millisecond puts the answer within reach of the
	// CANCELs, sent from 0 to 2 ms after the INVITE.
	e := newEnv(t, sip.Config{AnswerDelay: time.Millisecond, Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, nil)
	p := newPeer(t, nil, nil)
	uri := gosip.Uri{Scheme: "sip", User: agentNumber, Host: "127.0.0.1", Port: int(e.udp.Port())}
	const calls = 30
	answered := 0
	for i := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		sess, err := p.dua.Invite(ctx, uri, p.sdp(1), gosip.NewHeader("Content-Type", "application/sdp"))
		require.NoError(t, err)
		go func() {
			time.Sleep(time.Duration(i%5) * 500 * time.Microsecond)
			cancel()
		}()
		if err := sess.WaitAnswer(ctx, sipgo.AnswerOptions{}); err == nil || (sess.InviteResponse != nil && sess.InviteResponse.IsSuccess()) {
			// The 200 OK crossed the CANCEL: the dialog exists, end it.
			answered++
			bctx, bcancel := context.WithTimeout(context.Background(), 5*time.Second)
			require.NoError(t, sess.Ack(bctx))
			require.NoError(t, sess.Bye(bctx))
			bcancel()
		}
		cancel()
	}
	for id := int64(1); id <= calls; id++ {
		end := e.log.Wait(t, id, 5*time.Second)
		require.Len(t, e.log.Ends(id), 1)
		require.Equal(t, sip.ReasonCallerHangup, end.Reason)
	}
	require.Eventually(t, func() bool { return e.srv.ActiveCalls() == 0 }, 5*time.Second, 10*time.Millisecond)
	for _, s := range e.media.Sessions() {
		require.True(t, s.Closed())
	}
	t.Logf("%d of %d calls answered before the CANCEL", answered, calls)
}

// TestInboundEarlyMedia: with EarlyMedia, a call gets 183 with the SDP
// answer and media starts before the 200 OK.
func TestInboundEarlyMedia(t *testing.T) {
	siptest.CheckLeaks(t)
	e := newEnv(t, sip.Config{EarlyMedia: true, AnswerDelay: 300 * time.Millisecond}, nil)
	p := newPeer(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess, err := p.dua.Invite(ctx, gosip.Uri{Scheme: "sip", User: agentNumber, Host: "127.0.0.1", Port: int(e.udp.Port())}, p.sdp(1),
		gosip.NewHeader("Content-Type", "application/sdp"))
	require.NoError(t, err)
	var early []byte
	updatesAt183 := -1
	require.NoError(t, sess.WaitAnswer(ctx, sipgo.AnswerOptions{OnResponse: func(r *gosip.Response) error {
		if r.StatusCode == 183 {
			early = r.Body()
			if s := e.media.Session(1); s != nil {
				time.Sleep(20 * time.Millisecond)
				updatesAt183 = len(s.Updates())
			}
		}
		return nil
	}}))
	require.Contains(t, string(early), "m=audio", "183 carries the answer")
	require.Equal(t, string(early), string(sess.InviteResponse.Body()), "the 200 repeats the same answer")
	require.Equal(t, 1, updatesAt183, "media started on the 183")
	require.NoError(t, sess.Ack(ctx))
	require.NoError(t, sess.Bye(ctx))
	e.log.Wait(t, 1, 5*time.Second)
	require.Len(t, e.media.Session(1).Updates(), 1, "no second start at the answer")
}
