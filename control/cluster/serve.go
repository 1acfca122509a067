package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/control/simulations"
	"github.com/voiced/voiced/storage/coord"
)

// Listen serves h on addr until stop: over TLS with the PEM certFile
// and keyFile, plain HTTP without.
func Listen(addr, certFile, keyFile string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	var cert tls.Certificate
	if certFile != "" {
		if cert, err = tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return nil, fmt.Errorf("internal API certificate: %v", err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if certFile != "" {
		ln, scheme = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), "https"
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = hs.Serve(ln) }()
	log.Info("internal API listening", "internal_addr", ln.Addr().String(), "scheme", scheme)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}

// MediaURL is the realtime sessions' placement (realtime.Placer): the
// WebSocket base of a live, non-draining node the coord placement picks,
// wss:// when the control plane's public URL is https (nodes then sit
// behind TLS too), else ws://.
func MediaURL(p coord.Placer, publicURL string) func(ctx context.Context) (string, error) {
	scheme := "ws://"
	if strings.HasPrefix(publicURL, "https://") {
		scheme = "wss://"
	}
	return func(ctx context.Context) (string, error) {
		n, err := p.Pick(ctx)
		if err != nil {
			return "", err
		}
		return scheme + n.Addr, nil
	}
}

// Media is a media node as RunMedia serves it.
type Media struct {
	// ID names the node in the registry.
	ID string
	// HTTPAddr is where it listens; PublicURL, when set, the base the
	// node is reached at, whose host:port the registry gets.
	HTTPAddr, PublicURL string
	// Realtime is the realtime WebSocket's handler (GET /v1/realtime).
	Realtime http.Handler
	// Browser answers the browser calls the control plane places here
	// and Verifier checks trunks for it (nil: none); Secret authenticates
	// the control plane.
	Browser  browser.Media[control.AgentConfig]
	Verifier numbers.VoIPVerifier
	Secret   string
	// Metrics serves the node's /metrics (nil: none).
	Metrics http.Handler
	// Live counts the node's calls and sessions.
	Live func() int
	// Listen serves the listen socket of the node's calls (GET
	// /v1/calls/{call_id}/listen) and Listenable says whether the node
	// holds a call to listen to (nil: no live listen here).
	Listen     http.Handler
	Listenable func(callID int64) bool
	// Simulator makes the simulation runs' calls the control plane asks
	// of this node (cluster.Simulator; nil: none here).
	Simulator simulations.Simulator
	// Drain ends the node's calls, giving them until ctx ends.
	Drain func(ctx context.Context)
	// DrainTimeout is how long calls in progress get to end at shutdown
	// (0: none; they are ended at once).
	DrainTimeout time.Duration
}

// RunMedia serves m's realtime socket and GET /v1/healthz and keeps m in
// the registry (a heartbeat every second) until ctx ends; then it leaves the
// registry, drains the calls (up to m.DrainTimeout) and returns.
func RunMedia(ctx context.Context, m Media, reg coord.Registry, log *slog.Logger) error {
	ln, err := net.Listen("tcp", m.HTTPAddr)
	if err != nil {
		m.Drain(context.Background())
		return fmt.Errorf("listen on %s: %w", m.HTTPAddr, err)
	}
	addr := ln.Addr().String()
	if u, err := url.Parse(m.PublicURL); err == nil && u.Host != "" {
		addr = u.Host
	} else if ip := ln.Addr().(*net.TCPAddr).IP; ip.IsUnspecified() {
		ln.Close()
		m.Drain(context.Background())
		return fmt.Errorf("the node listens on every interface (%s): give --public-url, the address the control plane and clients reach it at", m.HTTPAddr)
	}
	an := NewAnnouncer(reg, m.ID, addr, m.Live, log)
	mux := http.NewServeMux()
	mux.Handle("GET /v1/realtime", m.Realtime)
	if m.Listen != nil {
		mux.Handle("GET /v1/calls/{call_id}/listen", m.Listen)
	}
	if m.Metrics != nil {
		mux.Handle("GET /metrics", m.Metrics)
	}
	if m.Simulator != nil {
		mux.Handle("POST "+Prefix+pathSimulate, simulateAPI(m.Secret, m.Simulator, log))
	}
	mux.Handle(Prefix, nodeAPI(m.Secret, m.Browser, m.Verifier, m.Listenable, log))
	mux.HandleFunc("GET /v1/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "role": "media", "node_id": m.ID, "calls": m.Live()})
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	hctx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeats()
	if err := an.Run(hctx); err != nil {
		hs.Close()
		m.Drain(context.Background())
		return fmt.Errorf("register in the node registry: %w", err)
	}
	log.Info("media node serving", "http_addr", ln.Addr().String(), "node_id", m.ID, "node_addr", addr)
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	log.Info("shutting down: leaving the registry, draining calls")
	stopBeats()
	lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if lerr := an.Leave(lctx); lerr != nil {
		log.Warn("registry leave failed", "err", lerr)
	}
	cancel()
	dctx, cancel := context.WithTimeout(context.Background(), m.DrainTimeout)
	m.Drain(dctx)
	cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}
