package call

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/rtp"
	"github.com/voiced/voiced/sip"
)

// Phone is the SIP/RTP front door: a sip.Server whose calls get an
// rtp.Session each, driven by the conversation engine (phonemedia.go).
// It adapts the control plane's interfaces (Control) to the sip
// package's. The engine behind a call is the agent with the node's
// providers; with Config.Loopback (or no providers), the loopback agent.
// It starts before the control plane, which takes it as its Dialer and
// VoIPVerifier; an INVITE before the Link is set is answered 503.
type Phone struct {
	log      *slog.Logger
	cfg      PhoneConfig
	blobDir  string
	bindIP   netip.Addr
	register bool
	rtpCfg   rtp.Config
	// prov runs real agents (nil: the loopback engine); tools is the
	// node's tool chain; model overrides the LLM's.
	prov  *Providers
	tools *Chain
	model string
	link  *Link

	srv   *sip.Server
	pacer *pace.Pacer
	ports *rtp.Ports

	// pending holds what a call's media needs between admission (or
	// Dial) and MediaPort.Open, by call id.
	pending sync.Map
	// media holds each open call's media, by call id, until Finish.
	media sync.Map
	// stats counts the calls' media for /metrics (quality.go).
	stats *Stats
	// recorders writes the calls' recordings (the node's, closed after us).
	recorders *agent.Recorders
}

// callInfo is what admission or the outbound request said about a call.
type callInfo struct {
	agent   control.AgentConfig
	orgID   int64
	agentID int64
	// maxDur is the funded duration (0: no limit); the agent ends the
	// call at it, the SIP side a little later as a backstop.
	maxDur time.Duration
	// outbound: a call we placed (Dial), billed from its callee's answer.
	outbound bool
}

// backstop is how long after the agent's own end at the funded duration
// the SIP side hangs up regardless.
const backstop = 5 * time.Second

// NewPhone returns the SIP/RTP front door; Start opens it. prov nil (or
// cfg.Loopback) runs the loopback engine; tools is the node's chain,
// stats the node's media figures (nil: none).
func NewPhone(cfg Config, log *slog.Logger, link *Link, prov *Providers, tools *Chain, stats *Stats, recs *agent.Recorders) *Phone {
	cfg = cfg.withDefaults()
	host, _, _ := net.SplitHostPort(cfg.Phone.Addr)
	ip, _ := netip.ParseAddr(host)
	if host == "localhost" {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	if cfg.Loopback {
		prov = nil
	}
	return &Phone{log: log.With("component", "telephony"), cfg: cfg.Phone, blobDir: cfg.BlobDir, bindIP: ip, register: cfg.Phone.Register,
		model: cfg.Model, prov: prov, tools: tools, link: link, stats: stats, recorders: recs}
}

// withBackstop is the SIP side's limit for an agent limit d.
func withBackstop(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + backstop
}

// Start opens the RTP port range, the pacer and the SIP listeners (UDP
// and TCP on Addr, TLS on its port + 1 when a certificate is set). With
// Addr taken by another program and not AddrRequired, it logs a warning
// and returns (false, nil): the node runs without telephony.
func (t *Phone) Start() (bool, error) {
	c := t.cfg
	ports, err := rtp.NewPorts(c.RTPLow, c.RTPHigh)
	if err != nil {
		return false, fmt.Errorf("rtp ports: %w", err)
	}
	// Calls receive and process on the pacer (media/rtp), and each worker
	// sends its calls' packets of a tick together through an io_uring
	// (rtp.NewPacerWorker).
	workers := runtime.GOMAXPROCS(0)
	if c.PacerRealtime != 0 {
		if err := pace.RealtimeAllowed(c.PacerRealtime); err != nil {
			// Without the right (root or CAP_SYS_NICE) the pacer ticks
			// through Go's scheduler, as with --rtp-pacer-realtime 0.
			t.log.Info("node pacer: real-time threads not permitted, ticking through Go's scheduler", "err", err.Error())
			c.PacerRealtime = 0
		}
	}
	if c.PacerRealtime != 0 {
		// One worker per core, and a P per worker beyond them: a worker
		// the kernel wakes takes a free P on its way out of the system
		// call instead of queueing behind the node's other goroutines.
		// PocketSphinx's decoding threads stay at one per core, so they
		// cannot hold these Ps (ai/stt/pocketsphinx, decodeThreadCount).
		workers = min(workers, runtime.NumCPU())
		if runtime.GOMAXPROCS(0) < 2*workers {
			runtime.GOMAXPROCS(2 * workers)
		}
	}
	pacer, err := pace.New(pace.Config{Workers: workers, NewWorker: rtp.NewPacerWorker, PreciseWake: true, AlignSends: true, NoPrefetch: c.NoPrefetch,
		Realtime: c.PacerRealtime}, t.log)
	if err != nil {
		return false, err
	}
	srv, err := sip.New(sip.Config{AdvertiseHost: c.Advertise, Trusted: c.Trusted, MaxCalls: c.MaxCalls}, t.log, sip.Deps{Admitter: t, Media: t, Calls: t, Trunks: t})
	if err != nil {
		pacer.Close()
		return false, err
	}
	t.srv, t.pacer, t.ports = srv, pacer, ports
	t.rtpCfg = rtp.Config{Local: t.bindIP}
	fail := func(err error) (bool, error) {
		srv.Close()
		pacer.Close()
		t.srv, t.pacer = nil, nil
		if !c.AddrRequired && errors.Is(err, syscall.EADDRINUSE) {
			t.log.Warn("telephony off: the default SIP address is taken; set --sip-addr", "sip_addr", c.Addr, "err", err)
			return false, nil
		}
		return false, err
	}
	sipAddr := c.Addr
	if host, port, err := net.SplitHostPort(sipAddr); err == nil && port == "0" {
		// SIP listens on one port number for UDP and TCP: find a number
		// free for both, or an ephemeral UDP port may be some outgoing
		// TCP connection's.
		if p, err := freeSIPPort(host); err == nil {
			sipAddr = net.JoinHostPort(host, strconv.Itoa(p))
		}
	}
	udp, err := srv.ListenUDP(sipAddr)
	if err != nil {
		return fail(err)
	}
	tcp, err := srv.ListenTCP(net.JoinHostPort(udp.Addr().String(), strconv.Itoa(int(udp.Port()))))
	if err != nil {
		return fail(err)
	}
	attrs := []any{"sip_udp", udp.String(), "sip_tcp", tcp.String(), "rtp_ports", strconv.Itoa(c.RTPLow) + "-" + strconv.Itoa(c.RTPHigh)}
	if len(c.TLS.Certificate) > 0 {
		port := 0
		if udp.Port() != 0 {
			port = int(udp.Port()) + 1
		}
		tl, err := srv.ListenTLS(net.JoinHostPort(udp.Addr().String(), strconv.Itoa(port)), &tls.Config{Certificates: []tls.Certificate{c.TLS}, MinVersion: tls.VersionTLS12})
		if err != nil {
			return fail(err)
		}
		attrs = append(attrs, "sip_tls", tl.String())
	}
	engine := "loopback"
	if t.prov != nil {
		engine = "agent"
	}
	attrs = append(attrs, "engine", engine)
	t.stats.setSIP(srv)
	t.log.Info("telephony listening", attrs...)
	return true, nil
}

// Close stops taking calls, gives the calls in progress until ctx ends
// and hangs up the rest. The pacer stays: browser and realtime calls
// share it (ClosePacer).
func (t *Phone) Close(ctx context.Context) {
	if t.srv == nil {
		return
	}
	if err := t.srv.Shutdown(ctx); err != nil {
		t.log.Info("calls cut at shutdown", "err", err)
	}
}

// Pacer is the node's send clock when telephony runs, so browser and
// realtime calls share the node's one pacer; nil otherwise.
func (t *Phone) Pacer() *pace.Pacer {
	if t == nil {
		return nil
	}
	return t.pacer
}

// ClosePacer stops the node's pacer, after every front door using it.
func (t *Phone) ClosePacer() {
	if t.pacer != nil {
		t.pacer.Close()
	}
}

// Admit implements sip.Admitter with control's CallLog.
func (t *Phone) Admit(ctx context.Context, a sip.Arrival) (sip.Admission, error) {
	ctl := t.link.get()
	if ctl == nil {
		return sip.Admission{}, sip.ErrNoCapacity // still starting
	}
	adm, err := ctl.Admit.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: a.To, From: a.From,
		WorkerExecution: "sip:" + a.SIPCallID})
	if err != nil {
		return sip.Admission{}, refusalOf(err)
	}
	info := callInfo{agent: adm.Agent, orgID: adm.OrgID, agentID: adm.AgentID, maxDur: callLimit(adm.Agent, adm.MaxDuration)}
	t.pending.Store(adm.CallID, info)
	return sip.Admission{CallID: adm.CallID, MaxDuration: withBackstop(info.maxDur)}, nil
}

// refusalOf maps control's admission refusals to the sip package's, which
// carry the SIP answer; the control error stays wrapped for the log.
func refusalOf(err error) error {
	for _, m := range []struct{ from, to error }{
		{calllog.ErrUnknownNumber, sip.ErrUnknownNumber},
		{calllog.ErrNumberInactive, sip.ErrNumberInactive},
		{calllog.ErrNoAgent, sip.ErrNoAgent},
		{calllog.ErrUnknownAgent, sip.ErrNoAgent},
		{calllog.ErrInsufficientBalance, sip.ErrInsufficientBalance},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w (%w)", m.to, err)
		}
	}
	return err
}

// InboundTrunk implements sip.TrunkLookup with the control plane's:
// numbers on a VoIP connection take calls from its allowed addresses and
// its hosts.
func (t *Phone) InboundTrunk(ctx context.Context, number string) (sip.InboundTrunk, bool, error) {
	ctl := t.link.get()
	if ctl == nil || ctl.Trunks == nil {
		return sip.InboundTrunk{}, false, nil
	}
	conn, ok, err := ctl.Trunks.InboundTrunk(ctx, number)
	if !ok || err != nil {
		return sip.InboundTrunk{}, false, err
	}
	it := sip.InboundTrunk{Host: conn.Host, OutboundProxy: conn.OutboundProxy, Codecs: conn.Codecs,
		// Transfers of the call (bridged, or asked for by the peer's
		// REFER) dial out through the same connection.
		Outbound: sipTrunk(conn.Trunk, false)}
	for _, a := range conn.AllowedSources {
		if p, err := netip.ParsePrefix(a); err == nil {
			it.Allowed = append(it.Allowed, p)
		} else if ip, err := netip.ParseAddr(a); err == nil {
			it.Allowed = append(it.Allowed, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}
	return it, true, nil
}

// Finish implements sip.CallLog: the end goes to control with the
// recording the call's media left.
func (t *Phone) Finish(ctx context.Context, id int64, e sip.End) error {
	t.tools.End(id)
	end := calllog.CallEnd{Status: e.Status, Reason: e.Reason, Detail: e.Detail, At: e.At}
	if c, ok := t.pending.Load(id); ok && c.(callInfo).outbound {
		end.Answered = e.Answered // the callee's answer: billed from it
	}
	if e.Code != 0 && !strings.Contains(end.Detail, strconv.Itoa(e.Code)) {
		end.Detail = strings.TrimSpace(end.Detail + " (SIP " + strconv.Itoa(e.Code) + ")")
	}
	ctl := t.link.get()
	if ctl == nil {
		return errors.New("call finished before the control plane runs")
	}
	if v, ok := t.media.LoadAndDelete(id); ok {
		m := v.(*callMedia)
		end.RecordingKey, end.RecordingStartedAt = m.recording()
		end.Quality = callQuality(m.rtp.Snapshot(), &m.rec.latency)
		t.stats.done(m.rtp.Metrics())
		if end.Reason == sip.ReasonCalleeHangup && m.vm.reachedMachine() {
			end.Reason = calllog.EndReasonVoicemail // the machine hung up first
		}
		turns := m.rec.take()
		if ev, ok := m.vm.event(); ok {
			turns = append(turns, ev)
		}
		if len(turns) > 0 {
			if err := ctl.Record.Append(ctx, id, turns); err != nil {
				t.log.Warn("transcript not recorded", "call_id", id, "err", err)
			}
		}
	}
	t.pending.Delete(id)
	return ctl.Finish.Finish(ctx, id, end)
}

// Dial implements control.Dialer.
func (t *Phone) Dial(ctx context.Context, o control.OutboundCall) error {
	if t.srv == nil {
		return errors.New("telephony is not running")
	}
	info := callInfo{agent: o.Agent, orgID: o.OrgID, agentID: o.AgentID, maxDur: callLimit(o.Agent, o.MaxDuration), outbound: true}
	t.pending.Store(o.CallID, info)
	err := t.srv.Dial(ctx, sip.OutboundCall{CallID: o.CallID, From: o.From, To: o.To, MaxDuration: withBackstop(info.maxDur),
		Trunk: *sipTrunk(o.Trunk, t.register)})
	if err != nil {
		t.pending.Delete(o.CallID)
	}
	return err
}

// VerifyVoIP implements numbers.VoIPVerifier with SIP OPTIONS.
func (t *Phone) VerifyVoIP(ctx context.Context, v numbers.VoIPCheck) (numbers.VoIPResult, error) {
	if t.srv == nil {
		return numbers.VoIPResult{}, errors.New("telephony is not running")
	}
	r, err := t.srv.VerifyTrunk(ctx, sip.Trunk{Host: v.Host, Port: v.Port, Transport: v.Transport, Username: v.Username,
		Password: v.Password, OutboundProxy: v.OutboundProxy}, v.Number)
	if err != nil {
		return numbers.VoIPResult{}, err
	}
	return numbers.VoIPResult{Verified: r.OK, Reason: r.Reason}, nil
}

// Open implements sip.MediaPort: an RTP session on the node's port range
// and pacer, driven by the call's conversation engine.
func (t *Phone) Open(ctx context.Context, c *sip.Call) (sip.Media, error) {
	var info callInfo
	if v, ok := t.pending.Load(c.ID()); ok {
		info = v.(callInfo)
	}
	s, err := rtp.NewSession(t.rtpCfg, t.log.With("call_id", c.ID()), t.pacer, t.ports)
	if err != nil {
		return nil, err
	}
	rec, err := newRecording(t.blobDir, info.orgID, c.ID())
	if err != nil {
		s.Close()
		return nil, err
	}
	m, err := newCallMedia(t, c, s, info, rec)
	if err != nil {
		s.Close()
		return nil, err
	}
	t.media.Store(c.ID(), m)
	t.stats.add(doorPhone, s.Metrics())
	return m, nil
}

// sipTrunk is a control plane trunk in the sip package's terms.
func sipTrunk(c calllog.Trunk, register bool) *sip.Trunk {
	return &sip.Trunk{Host: c.Host, Port: c.Port, Transport: c.Transport, Username: c.Username, Password: c.Password,
		OutboundProxy: c.OutboundProxy, Codecs: c.Codecs, Register: register}
}

// freeSIPPort finds a port number free for both UDP and TCP on host.
func freeSIPPort(host string) (int, error) {
	var err error
	for range 20 {
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", net.JoinHostPort(host, "0")); err != nil {
			return 0, err
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		var ln net.Listener
		ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		pc.Close()
		if err == nil {
			ln.Close()
			return port, nil
		}
	}
	return 0, err
}
