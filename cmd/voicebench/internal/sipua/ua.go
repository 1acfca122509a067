// Package sipua is voicebench's own SIP user agent on emiago/sipgo: it
// places calls with an SDP offer for the generator's codec, ACKs the
// answer, sends BYE at the end, and answers a BYE from the far end. It is
// independent of voiced's sip package on purpose: a load tool that shared
// the server's SIP code would share its bugs.
package sipua

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

// Config says whom to call.
type Config struct {
	// Server is the SIP server, host:port (UDP).
	Server string
	// To is the user part of the Request-URI: the number or agent dialled.
	To string
	// From is our user part; empty means "voicebench".
	From string
	// Local is the address our UA listens on for responses and in-dialog
	// requests; zero means 127.0.0.1 on an ephemeral port.
	Local netip.AddrPort
}

// UA is a SIP user agent that implements load.Target.
type UA struct {
	cfg     Config
	ua      *sipgo.UserAgent
	srv     *sipgo.Server
	pc      net.PacketConn
	dialogs *sipgo.DialogClientCache
	contact sip.ContactHeader
	server  sip.Uri
	wg      sync.WaitGroup
}

// New starts a UA listening on cfg.Local.
func New(cfg Config, log *slog.Logger) (*UA, error) {
	if cfg.Server == "" || cfg.To == "" {
		return nil, fmt.Errorf("%w: server and number are required", ErrConfig)
	}
	host, portStr, err := net.SplitHostPort(cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("%w: server %q: %v", ErrConfig, cfg.Server, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("%w: server port %q", ErrConfig, portStr)
	}
	if cfg.From == "" {
		cfg.From = "voicebench"
	}
	if !cfg.Local.IsValid() {
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pc, err := net.ListenPacket("udp", cfg.Local.String())
	if err != nil {
		return nil, fmt.Errorf("sipua listen %s: %w", cfg.Local, err)
	}
	local := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("voicebench"),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(log)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(log)))
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("sipua: %w", err)
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(log))
	if err != nil {
		ua.Close()
		pc.Close()
		return nil, fmt.Errorf("sipua: %w", err)
	}
	// Send from the listening socket so responses and the far end's BYE
	// come back to it.
	client, err := sipgo.NewClient(ua, sipgo.WithClientHostname(local.Addr().String()),
		sipgo.WithClientPort(int(local.Port())), sipgo.WithClientConnectionAddr(local.String()), sipgo.WithClientLogger(log))
	if err != nil {
		ua.Close()
		pc.Close()
		return nil, fmt.Errorf("sipua: %w", err)
	}
	u := &UA{cfg: cfg, ua: ua, srv: srv, pc: pc}
	u.contact = sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: cfg.From, Host: local.Addr().String(), Port: int(local.Port())}}
	u.dialogs = sipgo.NewDialogClientCache(client, u.contact)
	u.server = sip.Uri{Scheme: "sip", User: cfg.To, Host: host, Port: port}
	srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
		if err := u.dialogs.ReadBye(req, tx); err != nil {
			_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
		}
	})
	// Re-INVITEs and OPTIONS get a plain 200 so session refreshes pass.
	srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil))
	})
	u.wg.Go(func() { _ = srv.ServeUDP(pc) })
	// ServeUDP registers the socket asynchronously; a request sent before
	// that would make the client bind a second socket on the same port.
	for range 200 {
		if c, err := ua.TransportLayer().GetConnection("udp", local.String()); err == nil && c != nil {
			return u, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	u.Close()
	return nil, fmt.Errorf("sipua: UDP listener on %s did not register", local)
}

// Close stops the UA. Calls still up are not hung up.
func (u *UA) Close() error {
	err := u.ua.Close()
	u.pc.Close()
	u.wg.Wait()
	return err
}

// Dial implements load.Target: INVITE with an offer of o.Codec on
// o.SendFrom, wait for the 200 OK, ACK it.
func (u *UA) Dial(ctx context.Context, o load.Offer) (load.Session, load.Answer, error) {
	body := sdp.Write(o.SendFrom, rand.Uint64()>>1, o.Codec)
	ct := sip.ContentTypeHeader("application/sdp")
	from := &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.From, Host: u.contact.Address.Host, Port: u.contact.Address.Port},
		Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	sess, err := u.dialogs.Invite(ctx, u.server, []byte(body), &ct, from)
	if err != nil {
		return nil, load.Answer{}, fmt.Errorf("invite: %w", err)
	}
	// sipgo answers a cancelled context by sending CANCEL and waiting for
	// the INVITE transaction to end (up to Timer B, 32 s); a load test's
	// setup timeout should give up at once, so the wait gets a context
	// whose cause tells sipgo to return immediately.
	wctx, wcancel := context.WithCancelCause(context.Background())
	defer wcancel(nil)
	stop := context.AfterFunc(ctx, func() { wcancel(sipgo.WaitAnswerForceCancelErr) })
	defer stop()
	if err := sess.WaitAnswer(wctx, sipgo.AnswerOptions{}); err != nil {
		sess.Close()
		if ctx.Err() != nil {
			return nil, load.Answer{}, fmt.Errorf("invite: no answer: %w", ctx.Err())
		}
		var de *sipgo.ErrDialogResponse
		if errors.As(err, &de) {
			return nil, load.Answer{}, fmt.Errorf("invite: %d %s", de.Res.StatusCode, de.Res.Reason)
		}
		return nil, load.Answer{}, fmt.Errorf("invite: %w", err)
	}
	if err := sess.Ack(ctx); err != nil {
		u.bye(sess)
		return nil, load.Answer{}, fmt.Errorf("ack: %w", err)
	}
	m, err := sdp.Parse(string(sess.InviteResponse.Body()))
	if err != nil {
		u.bye(sess)
		return nil, load.Answer{}, fmt.Errorf("answer: %w", err)
	}
	c, err := m.Pick(o.Codec)
	if err != nil {
		u.bye(sess)
		return nil, load.Answer{}, fmt.Errorf("answer: %w", err)
	}
	return &session{u: u, d: sess}, load.Answer{SendTo: m.Addr, Codec: c}, nil
}

func (u *UA) bye(d *sipgo.DialogClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), sip.Timer_B)
	defer cancel()
	_ = d.Bye(ctx)
	d.Close()
}

type session struct {
	u *UA
	d *sipgo.DialogClientSession
}

// Hangup implements load.Session with a BYE.
func (s *session) Hangup(ctx context.Context) error {
	defer s.d.Close()
	if s.d.LoadState() == sip.DialogStateEnded {
		return nil
	}
	if err := s.d.Bye(ctx); err != nil {
		return fmt.Errorf("bye: %w", err)
	}
	return nil
}

// Ended implements load.Session: closed by the far end's BYE.
func (s *session) Ended() <-chan struct{} { return s.d.Context().Done() }
