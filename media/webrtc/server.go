package webrtc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	pion "github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
)

// certLifetime is how long one DTLS certificate serves new sessions. pion
// makes certificates valid for a month; sessions last minutes.
const certLifetime = 7 * 24 * time.Hour

// opusPayloadType is the payload type offered for Opus; browsers use 111.
const opusPayloadType = 111

// Server answers browsers' WebRTC offers: one PeerConnection per call, all
// of them on one UDP port, paced by the node's send clock. It is safe for
// concurrent use.
type Server struct {
	cfg      Config
	log      *slog.Logger
	api      *pion.API
	mux      ice.UDPMux
	pacer    *pace.Pacer
	ownPacer bool

	certMu sync.Mutex
	cert   *pion.Certificate
	certAt time.Time

	mu     sync.Mutex
	live   map[*Session]struct{}
	closed bool
	// wg owns the goroutines that close sessions on pion's events.
	wg sync.WaitGroup
}

// New starts a Server listening on cfg.UDPAddr. pacer is the node's send
// clock; nil means the Server runs its own (and closes it in Close).
func New(cfg Config, log *slog.Logger, pacer *pace.Pacer) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, pacer: pacer, live: map[*Session]struct{}{}}
	mux, err := listenMux(cfg, pionLogs{log})
	if err != nil {
		return nil, err
	}
	s.mux = mux
	if s.api, err = newAPI(cfg, mux, pionLogs{log}); err != nil {
		mux.Close()
		return nil, err
	}
	if s.pacer == nil {
		if s.pacer, err = pace.New(pace.Config{}, log); err != nil {
			mux.Close()
			return nil, err
		}
		s.ownPacer = true
	}
	return s, nil
}

// listenMux opens the one UDP socket (or, for an unspecified address, one
// socket per interface address on the same port) that every session's ICE
// shares, so a firewall needs a single UDP port open.
func listenMux(cfg Config, logs pionLogs) (ice.UDPMux, error) {
	addr, err := net.ResolveUDPAddr("udp", cfg.UDPAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: UDPAddr: %v", ErrBadConfig, err)
	}
	if addr.IP == nil || addr.IP.IsUnspecified() {
		opts := []ice.UDPMuxFromPortOption{ice.UDPMuxFromPortWithLogger(logs.NewLogger("udpmux")),
			ice.UDPMuxFromPortWithNetworks(ice.NetworkTypeUDP4), ice.UDPMuxFromPortWithReadBufferSize(4 << 20),
			ice.UDPMuxFromPortWithWriteBufferSize(4 << 20)}
		if cfg.IncludeLoopback {
			opts = append(opts, ice.UDPMuxFromPortWithLoopback())
		}
		m, err := ice.NewMultiUDPMuxFromPort(addr.Port, opts...)
		if err != nil {
			return nil, fmt.Errorf("listen webrtc udp %s: %w", cfg.UDPAddr, err)
		}
		return m, nil
	}
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen webrtc udp %s: %w", cfg.UDPAddr, err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	return ice.NewUDPMuxDefault(ice.UDPMuxParams{Logger: logs.NewLogger("udpmux"), UDPConn: conn}), nil
}

// newAPI builds the pion API every session shares: Opus only, RTCP
// sender and receiver reports, the shared UDP mux, the NAT rewrite and the
// ICE consent timers. pion's stats interceptor is left out: it costs a
// channel send per packet, and the session measures what it needs itself. SRTP and SRTCP replay protection are pion's
// defaults (on).
func newAPI(cfg Config, mux ice.UDPMux, logs pionLogs) (*pion.API, error) {
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(pion.RTPCodecParameters{
		RTPCodecCapability: pion.RTPCodecCapability{MimeType: pion.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1"},
		PayloadType:        opusPayloadType,
	}, pion.RTPCodecTypeAudio); err != nil {
		return nil, fmt.Errorf("register opus: %w", err)
	}
	ir := &interceptor.Registry{}
	if err := pion.ConfigureRTCPReports(ir); err != nil {
		return nil, fmt.Errorf("rtcp reports: %w", err)
	}
	se := pion.SettingEngine{LoggerFactory: logs}
	se.SetICEUDPMux(mux)
	se.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4, pion.NetworkTypeUDP6})
	se.SetICETimeouts(cfg.DisconnectedTimeout, cfg.FailedTimeout, 2*time.Second)
	se.SetIncludeLoopbackCandidate(cfg.IncludeLoopback)
	// Browsers' .local candidates are not resolved: a browser that hides its
	// addresses is still reached through the peer-reflexive candidate its
	// first connectivity check creates, and a multicast listener per
	// session would cost a socket and goroutines each.
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	if len(cfg.PublicIPs) > 0 {
		if err := se.SetICEAddressRewriteRules(pion.ICEAddressRewriteRule{External: cfg.PublicIPs,
			AsCandidateType: pion.ICECandidateTypeHost, Mode: pion.ICEAddressRewriteReplace}); err != nil {
			return nil, fmt.Errorf("%w: PublicIPs: %v", ErrBadConfig, err)
		}
	}
	return pion.NewAPI(pion.WithMediaEngine(m), pion.WithInterceptorRegistry(ir), pion.WithSettingEngine(se)), nil
}

// certificate returns the DTLS certificate new sessions use. One key pair
// serves many sessions (its fingerprint is in each answer, so browsers pin
// it per call): generating a key per call would cost more CPU than a
// minute of its audio.
func (s *Server) certificate() (pion.Certificate, error) {
	s.certMu.Lock()
	defer s.certMu.Unlock()
	if s.cert == nil || time.Since(s.certAt) > certLifetime {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return pion.Certificate{}, fmt.Errorf("dtls key: %w", err)
		}
		c, err := pion.GenerateCertificate(key)
		if err != nil {
			return pion.Certificate{}, fmt.Errorf("dtls certificate: %w", err)
		}
		s.cert, s.certAt = c, time.Now()
	}
	return *s.cert, nil
}

// LocalAddrs returns the UDP addresses sessions' media use.
func (s *Server) LocalAddrs() []net.Addr {
	type lister interface{ GetListenAddresses() []net.Addr }
	if l, ok := s.mux.(lister); ok {
		return l.GetListenAddresses()
	}
	return nil
}

// Sessions returns the number of live sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// Check reports whether a new session could start now: ErrClosed after
// Close, ErrCapacity at MaxSessions.
func (s *Server) Check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case len(s.live) >= s.cfg.MaxSessions:
		return ErrCapacity
	}
	return nil
}

// SessionOptions are one call's settings.
type SessionOptions struct {
	// CallID names the call in logs.
	CallID int64
	// MaxDuration ends the session (reason "timeout") this long after it
	// connects; zero means no limit.
	MaxDuration time.Duration
	// Metrics receives the call's quality counters; nil means the session
	// keeps its own (Stats reports them either way).
	Metrics *quality.Metrics
	// OnMessage receives the browser's data-channel messages other than
	// {"type":"hangup"}, on pion's goroutine; it must not block.
	OnMessage func(msg []byte)
}

// Answer answers a browser's SDP offer and starts the session: it returns
// once ICE gathering is complete, so the answer holds every candidate and
// signalling is one HTTP round trip. The session then runs until the
// browser hangs up (a data-channel hangup, DTLS close or the page going
// away), ICE fails, MaxDuration passes or Close is called; Done is closed
// then.
func (s *Server) Answer(ctx context.Context, offer string, opts SessionOptions) (*Session, string, error) {
	if !strings.Contains(strings.ToLower(offer), "opus/48000") {
		return nil, "", fmt.Errorf("%w: no Opus audio offered", ErrBadOffer)
	}
	cert, err := s.certificate()
	if err != nil {
		return nil, "", err
	}
	pcfg := pion.Configuration{Certificates: []pion.Certificate{cert}, BundlePolicy: pion.BundlePolicyMaxBundle}
	for _, is := range s.cfg.iceServers("voiced-"+strconv.FormatInt(opts.CallID, 10), time.Now()) {
		pcfg.ICEServers = append(pcfg.ICEServers, pion.ICEServer{URLs: is.URLs, Username: is.Username, Credential: is.Credential})
	}
	if s.cfg.RelayOnly {
		pcfg.ICETransportPolicy = pion.ICETransportPolicyRelay
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, "", ErrClosed
	case len(s.live) >= s.cfg.MaxSessions:
		s.mu.Unlock()
		return nil, "", ErrCapacity
	}
	sess, err := newSession(s, opts)
	if err == nil {
		s.live[sess] = struct{}{}
	}
	s.mu.Unlock()
	if err != nil {
		return nil, "", err
	}
	answer, err := sess.start(ctx, pcfg, offer)
	if err != nil {
		sess.Close("setup_failed")
		return nil, "", err
	}
	return sess, answer, nil
}

// release forgets a closed session.
func (s *Server) release(sess *Session) {
	s.mu.Lock()
	delete(s.live, sess)
	s.mu.Unlock()
}

// closeAsync closes sess on a goroutine the Server owns: pion's callbacks
// must not block on the PeerConnection they report about.
func (s *Server) closeAsync(sess *Session, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // Close is closing every session itself
	}
	s.wg.Go(func() { sess.Close(reason) })
}

// Close ends every session (reason "shutdown"), waits for them and
// releases the UDP port. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	live := make([]*Session, 0, len(s.live))
	for sess := range s.live {
		live = append(live, sess)
	}
	s.mu.Unlock()
	for _, sess := range live {
		sess.Close("shutdown")
	}
	s.wg.Wait()
	var err error
	if c, ok := s.mux.(io.Closer); ok {
		err = c.Close()
	}
	if s.ownPacer {
		s.pacer.Close()
	}
	return err
}
