package sip

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Deps are a Server's collaborators. Media and Calls are required;
// Admitter is required for inbound calls (without it every INVITE is
// refused 503); Trunks is optional (without it no source is checked).
type Deps struct {
	Admitter Admitter
	Media    MediaPort
	Calls    CallLog
	Trunks   TrunkLookup
	// Resolver resolves trunk hosts; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

// Server is a SIP user agent that answers and places calls. Create it
// with New, add listeners, and Close it (or Shutdown to drain first).
type Server struct {
	cfg  Config
	log  *slog.Logger
	deps Deps
	ua   *sipgo.UserAgent
	sg   *sipgo.Server
	lim  *limiter
	now  func() time.Time
	gate gateOpts

	// unparseable counts messages the gate dropped (Unparseable).
	unparseable atomic.Uint64

	// ctx is the server's lifetime; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	closing   bool
	listeners []io.Closer
	tports    map[string]*tport
	calls     map[string]*Call
	active    int
	regs      map[string]*registration
	wg        sync.WaitGroup
}

// tport is one listening transport: the client that sends requests from
// it and the Contact that points back at it.
type tport struct {
	name    string // "UDP", "TCP", "TLS"
	addr    netip.AddrPort
	client  *sipgo.Client
	contact sip.ContactHeader
	dua     *sipgo.DialogUA
}

// allowed is our Allow header: the methods we accept.
const allowed = "INVITE, ACK, CANCEL, BYE, OPTIONS, UPDATE, INFO, NOTIFY, REFER"

// New creates a Server. It listens nowhere until ListenUDP, ListenTCP or
// ListenTLS.
func New(cfg Config, log *slog.Logger, deps Deps) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.Media == nil || deps.Calls == nil {
		return nil, errors.New("sip: Deps.Media and Deps.Calls are required")
	}
	if deps.Resolver == nil {
		deps.Resolver = net.DefaultResolver
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, deps: deps, now: time.Now, tports: map[string]*tport{}, calls: map[string]*Call{},
		regs: map[string]*registration{}, gate: gateOpts{userAgent: cfg.UserAgent}}
	s.lim = newLimiter(cfg.RatePerSecond, cfg.Burst, cfg.MaxConnsPerIP, cfg.MaxMessageSize, cfg.Trusted, s.now)
	sipLog := slog.New(newQuietHandler(log.Handler(), 10*time.Second, s.now)).With("component", "sipgo")
	parser := sip.NewParser()
	parser.MaxMessageLength = cfg.MaxMessageSize
	ua, err := sipgo.NewUA(
		sipgo.WithUserAgent(cfg.UserAgent),
		sipgo.WithUserAgentParser(parser),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(sipLog), sip.WithTransportLayerReadFilter(s.lim.filter)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(sipLog)),
	)
	if err != nil {
		return nil, fmt.Errorf("sip: user agent: %w", err)
	}
	sg, err := sipgo.NewServer(ua, sipgo.WithServerLogger(sipLog))
	if err != nil {
		ua.Close()
		return nil, fmt.Errorf("sip: server: %w", err)
	}
	s.ua, s.sg = ua, sg
	s.ctx, s.cancel = context.WithCancel(context.Background())
	sg.OnInvite(s.guard(s.onInvite))
	sg.OnAck(s.guard(s.onAck))
	sg.OnBye(s.guard(s.onBye))
	sg.OnCancel(s.guard(s.onCancel))
	sg.OnOptions(s.guard(s.onOptions))
	sg.OnUpdate(s.guard(s.onUpdate))
	sg.OnInfo(s.guard(s.onInfo))
	sg.OnNotify(s.guard(s.onNotify))
	sg.OnRefer(s.guard(s.onRefer))
	sg.OnNoRoute(s.guard(s.onNoRoute))
	return s, nil
}

// Dropped counts messages and connections the rate, size and connection
// limits refused.
func (s *Server) Dropped() uint64 { return s.lim.dropped.Load() }

// ActiveCalls returns the number of calls in progress on this node.
func (s *Server) ActiveCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// ListenUDP serves SIP over UDP on addr ("host:port"; port 0 picks one)
// until Close, and returns the bound address.
func (s *Server) ListenUDP(addr string) (netip.AddrPort, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sip: listen udp %s: %w", addr, err)
	}
	ap := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	if err := s.addTransport("UDP", ap, pc); err != nil {
		pc.Close()
		return netip.AddrPort{}, err
	}
	s.wg.Go(func() { s.sg.ServeUDP(&gatedPacketConn{PacketConn: pc, s: s}) })
	// Requests we send leave from this socket: wait until sipgo has it,
	// or the first of them would try to bind the port a second time.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if c, err := s.ua.TransportLayer().GetConnection("udp", ap.String()); err == nil && c != nil {
			break
		}
	}
	return ap, nil
}

// ListenTCP serves SIP over TCP on addr until Close.
func (s *Server) ListenTCP(addr string) (netip.AddrPort, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sip: listen tcp %s: %w", addr, err)
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	wrapped := &gatedListener{Listener: &listener{Listener: ln, l: s.lim}, s: s}
	if err := s.addTransport("TCP", ap, wrapped); err != nil {
		ln.Close()
		return netip.AddrPort{}, err
	}
	s.wg.Go(func() { s.sg.ServeTCP(wrapped) })
	return ap, nil
}

// ListenTLS serves SIP over TLS on addr with conf (which must hold a
// certificate) until Close.
func (s *Server) ListenTLS(addr string, conf *tls.Config) (netip.AddrPort, error) {
	if conf == nil || (len(conf.Certificates) == 0 && conf.GetCertificate == nil) {
		return netip.AddrPort{}, errors.New("sip: TLS needs a certificate")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sip: listen tls %s: %w", addr, err)
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	tl := &gatedListener{Listener: tls.NewListener(&listener{Listener: ln, l: s.lim}, conf), s: s}
	if err := s.addTransport("TLS", ap, tl); err != nil {
		ln.Close()
		return netip.AddrPort{}, err
	}
	s.wg.Go(func() { s.sg.ServeTLS(tl) })
	return ap, nil
}

func (s *Server) addTransport(name string, ap netip.AddrPort, c io.Closer) error {
	host := s.advertiseHost(ap.Addr())
	opts := []sipgo.ClientOption{sipgo.WithClientHostname(host), sipgo.WithClientLogger(s.log.With("component", "sip_client"))}
	if name == "UDP" {
		// Send from the listening socket, so replies and in-dialog
		// requests come back to it.
		opts = append(opts, sipgo.WithClientPort(int(ap.Port())), sipgo.WithClientConnectionAddr(ap.String()))
	}
	client, err := sipgo.NewClient(s.ua, opts...)
	if err != nil {
		return fmt.Errorf("sip: client: %w", err)
	}
	contact := sip.ContactHeader{Address: sip.Uri{Scheme: "sip", Host: host, Port: int(ap.Port())}}
	if name != "UDP" {
		contact.Address.UriParams = sip.NewParams()
		contact.Address.UriParams.Add("transport", strings.ToLower(name))
	}
	t := &tport{name: name, addr: ap, client: client, contact: contact}
	t.dua = &sipgo.DialogUA{Client: client, ContactHDR: contact}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	if _, dup := s.tports[name]; dup {
		return fmt.Errorf("sip: already listening on %s", name)
	}
	s.tports[name] = t
	s.listeners = append(s.listeners, c)
	return nil
}

// advertiseHost is the host we put in Contact, Via and SDP for a
// listener or socket bound to ip.
func (s *Server) advertiseHost(ip netip.Addr) string {
	if s.cfg.AdvertiseHost != "" {
		return s.cfg.AdvertiseHost
	}
	if ip.IsValid() && !ip.IsUnspecified() {
		return ip.Unmap().String()
	}
	if a, ok := firstInterfaceAddr(); ok {
		return a.String()
	}
	return "127.0.0.1"
}

func firstInterfaceAddr() (netip.Addr, bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}

// transport returns the listening transport name ("UDP", "TCP", "TLS"),
// or nil when we do not listen on it.
func (s *Server) transport(name string) *tport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tports[strings.ToUpper(name)]
}

// anyTransport returns the transport for name, else UDP, else any: an
// outbound request over a transport we do not listen on still goes out
// (sipgo opens connections on demand) with the Contact of another one.
func (s *Server) anyTransport(name string) *tport {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tports[strings.ToUpper(name)]; t != nil {
		return t
	}
	if t := s.tports["UDP"]; t != nil {
		return t
	}
	for _, t := range s.tports {
		return t
	}
	return nil
}

// unavailable says why the node takes no new call ("shutting down", "no
// capacity"), or "" when it takes them.
func (s *Server) unavailable() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return "shutting down"
	case s.cfg.MaxCalls > 0 && s.active >= s.cfg.MaxCalls:
		return "no capacity"
	}
	return ""
}

// begin registers a call about to start, or refuses it while closing or
// at capacity.
func (s *Server) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	if s.cfg.MaxCalls > 0 && s.active >= s.cfg.MaxCalls {
		return ErrNoCapacity
	}
	s.active++
	s.wg.Add(1)
	return nil
}

func (s *Server) end() {
	s.mu.Lock()
	s.active--
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) addCall(key string, c *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[key] = c
}

func (s *Server) removeCall(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.calls, key)
}

// callFor finds the call of an in-dialog request.
func (s *Server) callFor(req *sip.Request) *Call {
	key, ok := requestKey(req)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

// dialogKey identifies a dialog from our side: Call-ID, our tag, the
// peer's tag.
func dialogKey(callID, localTag, remoteTag string) string {
	return callID + "\x00" + localTag + "\x00" + remoteTag
}

// requestKey is the dialog key of a request we receive: our tag is in
// To, the peer's in From.
func requestKey(req *sip.Request) (string, bool) {
	cid, from, to := req.CallID(), req.From(), req.To()
	if cid == nil || from == nil || to == nil {
		return "", false
	}
	lt, ok1 := to.Params.Get("tag")
	rt, ok2 := from.Params.Get("tag")
	if !ok1 || !ok2 || lt == "" {
		return "", false
	}
	return dialogKey(string(*cid), lt, rt), true
}

// Shutdown stops taking calls (new INVITEs get 503), waits for the calls
// in progress to end until ctx is done, then hangs up the rest and
// closes. It returns ctx's error when calls had to be cut.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var err error
	for s.ActiveCalls() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		}
	}
	s.Close()
	return err
}

// Close hangs up every call (end reason node_shutdown), unregisters,
// closes the listeners and waits for every goroutine it owns.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	calls := make([]*Call, 0, len(s.calls))
	for _, c := range s.calls {
		calls = append(calls, c)
	}
	regs := make([]*registration, 0, len(s.regs))
	for _, r := range s.regs {
		regs = append(regs, r)
	}
	s.mu.Unlock()
	for _, c := range calls {
		c.hangup(ReasonShutdown)
	}
	for _, r := range regs {
		r.stop()
	}
	// Calls still being set up see the lifetime context end. A call
	// waiting for the ACK of its 200 OK does not watch it: closing the
	// user agent below ends that wait.
	s.cancel()
	s.waitCalls(s.cfg.ByeTimeout + time.Second)
	s.mu.Lock()
	ls := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	err := s.ua.Close()
	s.wg.Wait()
	return err
}

// waitCalls waits up to d until no call is active (their goroutines
// finish after hanging up).
func (s *Server) waitCalls(d time.Duration) {
	for deadline := time.Now().Add(d); s.ActiveCalls() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// respond answers req with code and reason plus headers, logging a
// failure to send (the peer retransmits or gives up; nothing else to do).
func (s *Server) respond(req *sip.Request, tx sip.ServerTransaction, code int, reason string, body []byte, hdrs ...sip.Header) {
	res := sip.NewResponseFromRequest(req, code, reason, body)
	for _, h := range hdrs {
		res.AppendHeader(h)
	}
	if code == 405 || code == 200 && req.Method == sip.OPTIONS {
		res.AppendHeader(sip.NewHeader("Allow", allowed))
	}
	res.AppendHeader(sip.NewHeader("Server", s.cfg.UserAgent))
	if err := tx.Respond(res); err != nil {
		s.log.Debug("response not sent", "method", string(req.Method), "code", code, "err", err)
	}
}

// reasonHeader is an RFC 3326 Reason header for a SIP status.
func reasonHeader(code int, text string) sip.Header {
	return sip.NewHeader("Reason", "SIP ;cause="+strconv.Itoa(code)+` ;text="`+text+`"`)
}

// guard answers requests sipgo parsed but RFC 3261 refuses: another SIP
// version (505, section 21.5.6), a missing mandatory header (400,
// section 8.1.1), an option tag in Require we lack (420, 8.2.2.3). A
// malformed ACK is dropped: ACKs get no response.
func (s *Server) guard(h sipgo.RequestHandler) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		bad := ""
		switch {
		case req.SipVersion != "SIP/2.0":
			if !req.IsAck() {
				res := sip.NewResponseFromRequest(req, 505, "Version Not Supported", nil)
				res.SipVersion = "SIP/2.0"
				tx.Respond(res)
			}
			return
		case req.CallID() == nil:
			bad = "Call-ID"
		case req.From() == nil:
			bad = "From"
		case req.To() == nil:
			bad = "To"
		case req.CSeq() == nil:
			bad = "CSeq"
		// sipgo upper-cases the request's method: compare without case
		// (the gate has compared them exactly).
		case !strings.EqualFold(string(req.CSeq().MethodName), string(req.Method)) && !req.IsAck() && !req.IsCancel():
			bad = "CSeq method"
		}
		if bad != "" {
			if !req.IsAck() {
				s.respond(req, tx, 400, "Bad Request", nil, sip.NewHeader("Warning", `399 voiced "missing or bad `+bad+`"`))
			}
			return
		}
		// RFC 3261 8.2.2.3, for every request but ACK and CANCEL; an
		// INVITE is checked after its 100 Trying (inbound).
		if !req.IsAck() && !req.IsCancel() && !req.IsInvite() {
			if bad := unsupportedRequire(req); bad != "" {
				s.respond(req, tx, 420, "Bad Extension", nil, sip.NewHeader("Unsupported", bad))
				return
			}
		}
		h(req, tx)
	}
}

// onOptions answers OPTIONS, the keepalive probe of a dispatcher in
// front of the node (Kamailio's ds_ping): 200 while the node takes
// calls, 503 with Retry-After while it drains or is at MaxCalls, so the
// dispatcher sends new INVITEs elsewhere (RFC 3261 section 11.2 lets
// OPTIONS be answered with what an INVITE would get).
func (s *Server) onOptions(req *sip.Request, tx sip.ServerTransaction) {
	if text := s.unavailable(); text != "" {
		s.respond(req, tx, 503, "Service Unavailable", nil, reasonHeader(503, text), sip.NewHeader("Retry-After", "5"))
		return
	}
	s.respond(req, tx, 200, "OK", nil,
		sip.NewHeader("Accept", "application/sdp, application/dtmf-relay, application/dtmf, message/sipfrag"),
		sip.NewHeader("Accept-Language", "en"),
		sip.NewHeader("Supported", "timer"))
}

func (s *Server) onNoRoute(req *sip.Request, tx sip.ServerTransaction) {
	s.respond(req, tx, 405, "Method Not Allowed", nil)
}

func (s *Server) onCancel(req *sip.Request, tx sip.ServerTransaction) {
	// A CANCEL that matched an INVITE transaction never gets here (the
	// transaction layer answers it and the INVITE gets 487).
	s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
}

// Unparseable counts messages the gate dropped because no response
// could be addressed to them: malformed responses, requests without a
// usable Via, malformed ACKs.
func (s *Server) Unparseable() uint64 { return s.unparseable.Load() }

// dropUnparseable counts and logs a message dropped by the gate.
func (s *Server) dropUnparseable(src net.Addr, why string) {
	s.unparseable.Add(1)
	s.log.Debug("sip: dropped an unparseable message", "src", src.String(), "why", why)
}
