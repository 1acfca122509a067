package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/rtp"
	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/storage"
)

// telephony is the SIP/RTP front door of serve: a sip.Server whose
// calls get an rtp.Session each, driven by the conversation engine
// (engine.go). It adapts control's CallLog, Dialer and VoIPVerifier and
// the store's VoIP connections to the sip package's small interfaces.
// The engine behind a call is the agent with its providers
// (newProviders); with --call-loopback, the loopback agent.
// It starts before control.New (which takes it as Dialer and
// VoIPVerifier only when it runs) and gets the CallLog afterwards; an
// INVITE in between is answered 503.
type telephony struct {
	log      *slog.Logger
	store    *storage.Store
	blobDir  string
	bindIP   netip.Addr
	register bool
	rtpCfg   rtp.Config
	// prov runs real agents (nil: the loopback engine); x runs their
	// webhook-routed tools; model overrides the LLM's.
	prov  *providers
	x     *webhook.Exchanger
	model string

	srv   *sip.Server
	pacer *pace.Pacer
	ports *rtp.Ports
	calls atomic.Pointer[control.CallLog]

	// pending holds what a call's media needs between admission (or
	// Dial) and MediaPort.Open, by call id.
	pending sync.Map
	// media holds each open call's media, by call id, until Finish.
	media sync.Map
	// stats counts the calls' media for /metrics (quality.go).
	stats *mediaStats
}

// callInfo is what admission or the outbound request said about a call.
type callInfo struct {
	agent   control.AgentConfig
	orgID   int64
	agentID int64
	// maxDur is the funded duration (0: no limit); the agent ends the
	// call at it, the SIP side a little later as a backstop.
	maxDur time.Duration
}

// backstop is how long after the agent's own end at the funded duration
// the SIP side hangs up regardless.
const backstop = 5 * time.Second

func newTelephony(c *config, store *storage.Store, blobDir string, log *slog.Logger) *telephony {
	host, _, _ := net.SplitHostPort(c.SIPAddr)
	ip, _ := netip.ParseAddr(host)
	if host == "localhost" {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	return &telephony{log: log.With("component", "telephony"), store: store, blobDir: blobDir, bindIP: ip, register: c.SIPRegister,
		model: c.LLMModel, x: webhook.NewExchanger(store.Webhooks, c.WebhookAllowLoopback, time.Now, log)}
}

// withBackstop is the SIP side's limit for an agent limit d.
func withBackstop(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + backstop
}

// start opens the RTP port range, the pacer and the SIP listeners (UDP
// and TCP on --sip-addr, TLS on its port + 1 when a certificate is set).
// With the default --sip-addr taken by another program it logs a warning
// and returns (false, nil): serve runs without telephony; an address
// given explicitly must be free.
func (t *telephony) start(c *config, explicit bool) (bool, error) {
	ports, err := rtp.NewPorts(c.rtpLow, c.rtpHigh)
	if err != nil {
		return false, fmt.Errorf("--rtp-ports: %w", err)
	}
	// Calls receive and process on the pacer (media/rtp), and each worker
	// sends its calls' packets of a tick together through an io_uring
	// (rtp.NewPacerSendWorker), in --rtp-send-phases ticks a frame;
	// --rtp-receive ring also reads through it (rtp.NewPacerWorker).
	worker := rtp.NewPacerSendWorker
	if c.RTPReceive == "ring" {
		worker = rtp.NewPacerWorker
	}
	pacer, err := pace.New(pace.Config{Workers: runtime.GOMAXPROCS(0), Phases: int(c.RTPSendPhases), NewWorker: worker, PreciseWake: true, AlignSends: true, NoPrefetch: !c.RTPPrefetch}, t.log)
	if err != nil {
		return false, err
	}
	srv, err := sip.New(sip.Config{AdvertiseHost: c.SIPAdvertise, Trusted: c.sipTrusted}, t.log, sip.Deps{Admitter: t, Media: t, Calls: t, Trunks: t})
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
		if t.prov != nil {
			t.prov.close()
			t.prov = nil
		}
		if !explicit && errors.Is(err, syscall.EADDRINUSE) {
			t.log.Warn("telephony off: the default SIP address is taken; set --sip-addr", "sip_addr", c.SIPAddr, "err", err)
			return false, nil
		}
		return false, err
	}
	if !c.CallLoopback {
		if t.prov, err = newProviders(c); err != nil {
			return fail(err)
		}
	}
	sipAddr := c.SIPAddr
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
	attrs := []any{"sip_udp", udp.String(), "sip_tcp", tcp.String(), "rtp_ports", c.RTPPorts}
	if c.tlsCert != nil {
		port := 0
		if udp.Port() != 0 {
			port = int(udp.Port()) + 1
		}
		tl, err := srv.ListenTLS(net.JoinHostPort(udp.Addr().String(), strconv.Itoa(port)), &tls.Config{Certificates: []tls.Certificate{*c.tlsCert}, MinVersion: tls.VersionTLS12})
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
	t.log.Info("telephony listening", attrs...)
	return true, nil
}

// setCallLog hands over control's CallLog once control runs.
func (t *telephony) setCallLog(l *control.CallLog) { t.calls.Store(l) }

// close stops taking calls, gives the calls in progress until ctx ends
// and hangs up the rest. The pacer stays: browser and realtime calls
// share it (closePacer).
func (t *telephony) close(ctx context.Context) {
	if t.srv == nil {
		return
	}
	if err := t.srv.Shutdown(ctx); err != nil {
		t.log.Info("calls cut at shutdown", "err", err)
	}
	if t.prov != nil {
		t.prov.close()
		t.prov = nil
	}
}

// closePacer stops the node's pacer, after every front door using it.
func (t *telephony) closePacer() {
	if t.pacer != nil {
		t.pacer.Close()
	}
}

// Admit implements sip.Admitter with control's CallLog.
func (t *telephony) Admit(ctx context.Context, a sip.Arrival) (sip.Admission, error) {
	calls := t.calls.Load()
	if calls == nil {
		return sip.Admission{}, sip.ErrNoCapacity // still starting
	}
	adm, err := calls.Admit(ctx, control.AdmitRequest{Direction: storage.DirectionInbound, To: a.To, From: a.From,
		WorkerExecution: "sip:" + a.SIPCallID})
	if err != nil {
		return sip.Admission{}, refusalOf(err)
	}
	info := callInfo{agent: adm.Agent, orgID: adm.OrgID, agentID: adm.AgentID, maxDur: agentLimit(adm.Agent, adm.MaxDuration)}
	t.pending.Store(adm.CallID, info)
	return sip.Admission{CallID: adm.CallID, MaxDuration: withBackstop(info.maxDur)}, nil
}

// refusalOf maps control's admission refusals to the sip package's, which
// carry the SIP answer; the control error stays wrapped for the log.
func refusalOf(err error) error {
	for _, m := range []struct{ from, to error }{
		{control.ErrUnknownNumber, sip.ErrUnknownNumber},
		{control.ErrNumberInactive, sip.ErrNumberInactive},
		{control.ErrNoAgent, sip.ErrNoAgent},
		{control.ErrUnknownAgent, sip.ErrNoAgent},
		{control.ErrInsufficientBalance, sip.ErrInsufficientBalance},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w (%w)", m.to, err)
		}
	}
	return err
}

// agentLimit is the call's limit: the funded duration, or the agent's
// max_call_duration_seconds when shorter; 0 for none.
func agentLimit(a control.AgentConfig, funded time.Duration) time.Duration {
	d := funded
	if s := a.MaxCallDurationSeconds; s > 0 && time.Duration(s)*time.Second < d {
		d = time.Duration(s) * time.Second
	}
	if d >= control.NoLimit {
		return 0
	}
	return d
}

// InboundTrunk implements sip.TrunkLookup from the store: numbers on a
// VoIP connection take calls from its allowed addresses and its hosts.
func (t *telephony) InboundTrunk(ctx context.Context, number string) (sip.InboundTrunk, bool, error) {
	n, err := t.store.PhoneNumberByE164(ctx, number)
	if errors.Is(err, storage.ErrNotFound) {
		return sip.InboundTrunk{}, false, nil
	}
	if err != nil {
		return sip.InboundTrunk{}, false, err
	}
	if n.Source != storage.SourceVoIP || n.VoIPConnectionID == nil {
		return sip.InboundTrunk{}, false, nil
	}
	conn, err := t.store.Numbers.VoIPConnection(ctx, n.OrgID, *n.VoIPConnectionID)
	if err != nil {
		return sip.InboundTrunk{}, false, err
	}
	it := sip.InboundTrunk{Host: conn.Host, OutboundProxy: conn.OutboundProxy, Codecs: conn.Codecs,
		// Transfers of the call (bridged, or asked for by the peer's
		// REFER) dial out through the same connection.
		Outbound: &sip.Trunk{Host: conn.Host, Port: conn.Port, Transport: conn.Transport, Username: conn.Username, Password: conn.Password,
			OutboundProxy: conn.OutboundProxy, Codecs: conn.Codecs}}
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
func (t *telephony) Finish(ctx context.Context, id int64, e sip.End) error {
	end := control.CallEnd{Status: e.Status, Reason: e.Reason, Detail: e.Detail, At: e.At}
	if e.Code != 0 && !strings.Contains(end.Detail, strconv.Itoa(e.Code)) {
		end.Detail = strings.TrimSpace(end.Detail + " (SIP " + strconv.Itoa(e.Code) + ")")
	}
	calls := t.calls.Load()
	if v, ok := t.media.LoadAndDelete(id); ok {
		m := v.(*callMedia)
		end.RecordingKey, end.RecordingStartedAt = m.recording()
		end.Quality = callQuality(m.rtp.Snapshot(), &m.latency)
		t.stats.done(m.rtp.Metrics())
		if end.Reason == sip.ReasonCalleeHangup && m.vm.reachedMachine() {
			end.Reason = control.EndReasonVoicemail // the machine hung up first
		}
		turns := m.transcript()
		if ev, ok := m.vm.event(); ok {
			turns = append(turns, ev)
		}
		if len(turns) > 0 {
			if err := calls.Append(ctx, id, turns); err != nil {
				t.log.Warn("transcript not recorded", "call_id", id, "err", err)
			}
		}
	}
	t.pending.Delete(id)
	return calls.Finish(ctx, id, end)
}

// Dial implements control.Dialer.
func (t *telephony) Dial(ctx context.Context, o control.OutboundCall) error {
	if t.srv == nil {
		return errors.New("telephony is not running")
	}
	info := callInfo{agent: o.Agent, orgID: o.OrgID, agentID: o.AgentID, maxDur: agentLimit(o.Agent, o.MaxDuration)}
	t.pending.Store(o.CallID, info)
	err := t.srv.Dial(ctx, sip.OutboundCall{CallID: o.CallID, From: o.From, To: o.To, MaxDuration: withBackstop(info.maxDur),
		Trunk: sip.Trunk{Host: o.Trunk.Host, Port: o.Trunk.Port, Transport: o.Trunk.Transport, Username: o.Trunk.Username,
			Password: o.Trunk.Password, OutboundProxy: o.Trunk.OutboundProxy, Codecs: o.Trunk.Codecs, Register: t.register}})
	if err != nil {
		t.pending.Delete(o.CallID)
	}
	return err
}

// VerifyVoIP implements control.VoIPVerifier with SIP OPTIONS.
func (t *telephony) VerifyVoIP(ctx context.Context, v control.VoIPCheck) (control.VoIPResult, error) {
	if t.srv == nil {
		return control.VoIPResult{}, errors.New("telephony is not running")
	}
	r, err := t.srv.VerifyTrunk(ctx, sip.Trunk{Host: v.Host, Port: v.Port, Transport: v.Transport, Username: v.Username,
		Password: v.Password, OutboundProxy: v.OutboundProxy}, v.Number)
	if err != nil {
		return control.VoIPResult{}, err
	}
	return control.VoIPResult{Verified: r.OK, Reason: r.Reason}, nil
}

// Open implements sip.MediaPort: an RTP session on the node's port range
// and pacer, driven by the call's conversation engine.
func (t *telephony) Open(ctx context.Context, c *sip.Call) (sip.Media, error) {
	var info callInfo
	if v, ok := t.pending.Load(c.ID()); ok {
		info = v.(callInfo)
	}
	s, err := rtp.NewSession(t.rtpCfg, t.log.With("call_id", c.ID()), t.pacer, t.ports)
	if err != nil {
		return nil, err
	}
	recDir := filepath.Join(t.blobDir, "recordings", strconv.FormatInt(info.orgID, 10))
	if err := os.MkdirAll(recDir, 0o700); err != nil {
		s.Close()
		return nil, fmt.Errorf("recording dir: %w", err)
	}
	m, err := newCallMedia(t, c, s, info, recDir)
	if err != nil {
		s.Close()
		return nil, err
	}
	t.media.Store(c.ID(), m)
	t.stats.add(doorPhone, s.Metrics())
	return m, nil
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
