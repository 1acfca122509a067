package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/call"
	"github.com/voiced/voiced/control"
	operator "github.com/voiced/voiced/control/admin"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/cluster"
	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// suiteSchedule is the suite scheduler's clock and poll: zero (the real
// clock, 15 s) except in tests that accelerate the schedule.
var suiteSchedule control.SuiteScheduleConfig

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs, err := parse("serve", "Runs the all-in-one server: the /v1 API and the SIP/RTP, WebRTC and realtime front doors, with SQLite and\nin-process coordination by default, or PostgreSQL and Redis.", args, stdout, &c, nil, flagsExcept(clusterFlags)...)
	if err != nil {
		return err
	}
	return runControl(ctx, &c, fs, stdout, stderr, true)
}

// runControl runs the control plane: with the node's front doors in the
// same process (serve), or with the internal API media nodes reach it
// through instead (voiced control).
func runControl(ctx context.Context, c *config, fs *flag.FlagSet, stdout, stderr io.Writer, withNode bool) error {
	log := newLogger(c, stderr)
	env, err := openEnv(ctx, c, log)
	if err != nil {
		return err
	}
	defer env.close()

	if err := firstUse(ctx, env.store, c, stdout, log); err != nil {
		return err
	}
	stopDiag, err := diagnostics(ctx, c, log)
	if err != nil {
		return err
	}
	defer stopDiag()
	ln, err := net.Listen("tcp", c.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on --http-addr %s: %w", c.HTTPAddr, err)
	}
	public := c.PublicURL
	if public == "" {
		public = "http://" + ln.Addr().String()
	}
	blobDir := filepath.Join(c.DataDir, "blobs")
	if err := os.MkdirAll(blobDir, 0o700); err != nil {
		ln.Close()
		return fmt.Errorf("create blob dir: %w", err)
	}
	// The live call's front doors start first so control gets its dialer,
	// trunk verifier and browser media only when they run.
	var node *call.Node
	var opts []control.Option
	// Listen tokens: serve signs and checks them with a key of its
	// secret; a cluster with one of the cluster secret, which control
	// and the media nodes share.
	listenKey := calls.ListenKey(signingKey(env.key))
	if !withNode {
		listenKey = calls.ListenKey([]byte(c.ClusterSecret))
	}
	if withNode {
		if node, err = call.NewNode(c.callConfig(blobDir, fs), c.prov, log); err != nil {
			ln.Close()
			return err
		}
		// Browser calls end after the HTTP drain (deferred calls run last
		// in, first out), and are recorded; then the pacer stops.
		defer node.Close(context.Background())
		if node.PhoneOn {
			opts = append(opts, control.WithDialer(node.Phone), control.WithVoIPVerifier(node.Phone))
		}
		if node.Browser != nil {
			opts = append(opts, control.WithBrowserMedia(node.Browser))
		}
		opts = append(opts, control.WithLive(nodeLive{node, api.WebSocketURL(public)}, listenKey))
		simr, err := newSimulator(log, c.call.Phone.Addr, node.PhoneOn, llm.OpenAIConfig{BaseURL: c.prov.LLMBaseURL, APIKey: c.prov.LLMAPIKey, Model: c.prov.LLMModel})
		if err != nil {
			ln.Close()
			return err
		}
		defer simr.close()
		opts = append(opts, control.WithSimulator(simr))
	}
	// Without the node, calls are placed on media nodes (voiced control
	// has Redis, whose coordinator places and carries commands).
	placer, _ := env.coord.(coord.Coordinator)
	var nodes *cluster.Nodes
	var dialer *cluster.Dialer
	if !withNode {
		nodes, dialer = cluster.NewNodes(placer, c.ClusterSecret, public), cluster.NewDialer(placer, placer, c.ClusterSecret)
		opts = append(opts, control.WithDialer(dialer), control.WithBrowserMedia(nodes), control.WithVoIPVerifier(nodes),
			control.WithLive(cluster.NewLive(placer, placer, c.ClusterSecret, public), listenKey))
	}
	drain := func(ctx context.Context) {
		if node != nil {
			node.Drain(ctx)
		}
	}
	srv, err := control.New(control.Config{PublicURL: public, AccessLog: c.AccessLog, Version: version, Resources: control.ResourcesConfig{
		Products: c.products, DIDPool: c.didPool, BlobDir: blobDir, SigningKey: signingKey(env.key), AudioURLTTL: c.audioURLTTL,
	}, Payments: c.paymentConfig(), Webhooks: webhook.Config{AllowLoopback: c.WebhookAllowLoopback}, MonitoringToken: c.MonitoringToken, Embed: c.Embed,
		Model: llm.OpenAIConfig{BaseURL: c.prov.LLMBaseURL, APIKey: c.prov.LLMAPIKey, Model: c.prov.LLMModel}, Suites: suiteSchedule}, log, env.store, env.coord, opts...)
	if err != nil {
		ln.Close()
		drain(context.Background())
		return err
	}
	calls := srv.CallLog()
	x := webhook.NewExchanger(env.store.Webhooks, c.WebhookAllowLoopback, time.Now, log)
	if withNode {
		var slots call.Slots
		if s, ok := realtime.SlotsOf(env.coord); ok {
			slots = s
		}
		// A mid-call tool call may take as long as the chain's tool deadline.
		mcpTools := mcp.NewCallCatalog(env.store.MCPServers, mcp.NewConnector(mcp.ConnectorConfig{AllowLoopback: c.WebhookAllowLoopback, Timeout: 30 * time.Second}), log)
		rt, err := node.Connect(call.Control{Admit: calls, Record: calls, Finish: calls, Tools: x, Trunks: calls, Credentials: srv.Realtime(), MCP: mcpTools,
			Knowledge: srv.CallKnowledge()}, slots)
		if err != nil {
			ln.Close()
			drain(context.Background())
			srv.Close()
			return err
		}
		srv.Realtime().Mount(rt)
		srv.MountListen(node.ListenHandler(listenKey))
		srv.SetMediaStats(node.Stats.Read)
		node.RecordProviders(srv.ProviderErrors())
	} else {
		// One replica at a time ends the calls of nodes that are lost;
		// any replica those of a node that restarts.
		reaper := cluster.NewReaper(placer, placer, env.store.Calls, calls, log.With("component", "reaper"))
		api := cluster.NewServer(cluster.ServerConfig{Secret: c.ClusterSecret, BlobDir: blobDir, Metrics: srv.Registry()},
			cluster.Backend{Calls: calls, Tools: x, Credentials: srv.Realtime(), MCP: env.store.MCPServers, Knowledge: srv.CallKnowledge(), Restarts: reaper}, log)
		stop, err := cluster.Listen(c.InternalAddr, c.InternalTLSCert, c.InternalTLSKey, api, log)
		if err != nil {
			ln.Close()
			srv.Close()
			return err
		}
		defer stop()
		srv.Realtime().PlaceOn(cluster.MediaURL(placer, public))
		srv.Realtime().Mount(cluster.RealtimeProxy(placer, public, log))
		// Calls the control plane places are recorded as their node's.
		dialer.SetOwners(calls)
		nodes.SetOwners(calls)
		rctx, stopReaper := context.WithCancel(context.WithoutCancel(ctx))
		reaped := make(chan struct{})
		go func() {
			defer close(reaped)
			reaper.Run(rctx)
		}()
		defer func() { stopReaper(); <-reaped }()
	}
	// The provisioning pass activates demo numbers; it stops with serve.
	pctx, stopProvisioner := context.WithCancel(ctx)
	provisioned := make(chan struct{})
	go func() {
		defer close(provisioned)
		srv.Numbers().Run(pctx, time.Second)
	}()
	defer func() {
		stopProvisioner()
		<-provisioned
	}()
	// Webhook delivery and auto-reload run until serve returns, after the
	// HTTP drain.
	stopBackground, err := background(ctx, c, env.store, calls.RunBillSweep, srv.ProviderErrors(), log)
	if err != nil {
		ln.Close()
		drain(context.Background())
		srv.Close()
		return err
	}
	defer stopBackground()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", "http_addr", ln.Addr().String(), "public_url", public, "database", string(env.db.Dialect), "coordination", env.coordKind, "demo_numbers", len(c.didPool))

	select {
	case err := <-errc:
		drain(context.Background())
		srv.Close()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining calls and requests", "drain_timeout", c.drainTimeout.String())
	// Calls in progress get --drain-timeout; they end before the API that
	// records them stops, which then gets its own time for requests.
	dctx, cancelDrain := context.WithTimeout(context.Background(), c.drainTimeout)
	drain(dctx)
	cancelDrain()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// signingKey derives the key of signed URLs from the secret key, so
// replicas sharing --secret-key accept each other's URLs and the key never
// doubles as the encryption key.
func signingKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("voiced signed URLs v1"))
	return m.Sum(nil)
}

// firstUse creates an owner, an org and an API key on an empty database and
// prints the key once.
func firstUse(ctx context.Context, store *storage.Store, c *config, stdout io.Writer, log *slog.Logger) error {
	b, ok, err := operator.New(store.Orgs, store.Keys, store.Billing).FirstUse(ctx, "owner@localhost", "Default", c.DevCreditCents)
	if !ok {
		return err
	}
	fmt.Fprintf(stdout, "\nFirst run: created organization %d and its owner %s.\nAPI key (shown once, keep it):\n\n  %s\n\nTry: curl -H \"Authorization: Bearer %s\" %s/v1/orgs/\n\n",
		b.OrgID, "owner@localhost", b.APIKey, b.APIKey, strings.TrimRight(publicOr(c), "/"))
	log.Info("first use bootstrap", "org_id", b.OrgID, "user_id", b.UserID, "credit_cents", c.DevCreditCents)
	return nil
}

func publicOr(c *config) string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	return "http://" + c.HTTPAddr
}

func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	if _, err := parse("migrate", "Applies every pending database migration and exits.", args, stdout, &c, nil, "data-dir", "database-url", "log-level", "log-format"); err != nil {
		return err
	}
	log := newLogger(&c, stderr)
	db, err := storage.Open(ctx, storage.Config{URL: c.DatabaseURL, DataDir: c.DataDir})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx, log); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

// nodeLive is serve's live calls: the node in this process, its listen
// socket at ws, the API's own base.
type nodeLive struct {
	n  *call.Node
	ws string
}

func (l nodeLive) Listen(_ context.Context, _, callID int64) (string, error) {
	if !l.n.Listenable(callID) {
		return "", calls.ErrNotLive
	}
	return l.ws, nil
}

func (l nodeLive) Whisper(_ context.Context, _, callID int64, text string) error {
	if err := l.n.Whisper(callID, text); err != nil {
		if errors.Is(err, call.ErrNotLive) {
			return calls.ErrNotLive
		}
		return err
	}
	return nil
}
