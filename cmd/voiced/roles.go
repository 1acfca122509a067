package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/call"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/cluster"
	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/storage/coord"
)

// Flags of one role only: serve takes neither clusterFlags; control
// takes no mediaFlags; media no controlFlags (it refuses --database-url).
// Both take the --llm-* flags: media nodes' calls talk to the model, and
// control's grading judge does.
var (
	clusterFlags = []string{"cluster-secret", "internal-addr", "internal-tls-cert", "internal-tls-key", "control-url", "control-ca", "node-id"}
	mediaFlags   = []string{"sip-addr", "sip-tls-cert", "sip-tls-key", "sip-advertise", "sip-register", "sip-trusted", "rtp-ports", "rtp-prefetch", "rtp-pacer-realtime",
		"tts-base-url", "tts-api-key", "tts-model", "stt-base-url", "stt-api-key", "stt-model",
		"realtime-delta-ms", "realtime-org-sessions", "call-loopback", "realtime-loopback", "webrtc-udp-addr", "webrtc-public-ip", "webrtc-turn",
		"webrtc-turn-user", "webrtc-turn-password", "webrtc-turn-secret", "webrtc-turn-ttl", "webrtc-max-sessions", "control-url", "control-ca", "node-id",
		"sip-max-calls", "drain-timeout"}
	controlFlags = []string{"secret-key", "dev-credit-cents", "number-fee-cents", "did-pool", "products", "audio-url-ttl", "stripe-api-key",
		"stripe-api-base", "stripe-webhook-secret", "monitoring-token", "embed-base-url", "embed-api-key", "embed-model",
		"internal-addr", "internal-tls-cert", "internal-tls-key"}
)

// flagsExcept names every flag but those in except.
func flagsExcept(except []string) []string {
	var out []string
	for _, s := range bindFlags(flag.NewFlagSet("", flag.ContinueOnError), &config{}) {
		if !slices.Contains(except, s.name) {
			out = append(out, s.name)
		}
	}
	return out
}

// validateCluster checks the roles' link flags.
func (c *config) validateCluster(has func(string) bool) error {
	if has("cluster-secret") && c.ClusterSecret != "" && len(c.ClusterSecret) < 32 {
		return errors.New("invalid --cluster-secret: use at least 32 characters (openssl rand -hex 32)")
	}
	if has("internal-addr") {
		if err := checkHostPort(c.InternalAddr); err != nil {
			return fmt.Errorf("invalid --internal-addr %q: %v", c.InternalAddr, err)
		}
	}
	if (c.InternalTLSCert == "") != (c.InternalTLSKey == "") {
		return errors.New("invalid --internal-tls-cert/--internal-tls-key: give both or neither")
	}
	if has("control-url") && c.ControlURL != "" {
		if u, err := url.Parse(c.ControlURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("invalid --control-url %q: want the control role's internal API, like http://10.0.0.5:8081", c.ControlURL)
		}
	}
	return nil
}

func controlRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs, err := parse("control", "Runs the control plane of a scaled-out deployment: the /v1 API, billing, webhooks and the background\nworkers, and the internal API media nodes reach it through (--internal-addr, --cluster-secret). No SIP,\nRTP, WebRTC or realtime front doors: those run on voiced media nodes.", args, stdout, &c, nil, flagsExcept(mediaFlags)...)
	if err != nil {
		return err
	}
	switch {
	case c.ClusterSecret == "":
		return errors.New("voiced control needs --cluster-secret (VOICED_CLUSTER_SECRET): the internal API is refused without one")
	case c.RedisURL == "":
		return errors.New("voiced control needs --redis-url: the media nodes register and are placed through Redis")
	}
	return runControl(ctx, &c, fs, stdout, stderr, false)
}

func mediaRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs, err := parse("media", "Runs a media node: the SIP/RTP, WebRTC and realtime WebSocket front doors, with no database. It reaches\nthe control plane through its internal API (--control-url, --cluster-secret) and registers in the Redis\nregistry (--redis-url), heartbeating every second.", args, stdout, &c, nil, append(flagsExcept(controlFlags), "database-url")...)
	if err != nil {
		return err
	}
	switch {
	case c.DatabaseURL != "" && flagGiven(fs, "database-url"):
		return errors.New("voiced media holds no database connection: drop --database-url (VOICED_DATABASE_URL); the control role has the database")
	case c.ControlURL == "" || c.ClusterSecret == "" || c.RedisURL == "":
		return errors.New("voiced media needs --control-url, --cluster-secret and --redis-url")
	}
	log := newLogger(&c, stderr)
	stopDiag, err := diagnostics(ctx, &c, log)
	if err != nil {
		return err
	}
	defer stopDiag()
	e := &env{}
	defer e.close()
	if err := openRedisCoord(ctx, e, &c); err != nil {
		return err
	}
	if c.NodeID == "" {
		host, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(c.call.Phone.Addr)
		c.NodeID = host + ":" + port
	}
	spool := filepath.Join(c.DataDir, "spool")
	// Requests name the node: the calls it admits are its own.
	cl, err := cluster.NewClient(cluster.ClientConfig{URL: c.ControlURL, Secret: c.ClusterSecret, SpoolDir: spool, CAFile: c.ControlCA, NodeID: c.NodeID}, log)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("reach the control plane at --control-url %s: %w", c.ControlURL, err)
	}
	// Before taking calls: those this node id held before a crash end now
	// (a quick restart under the same id leaves the registry no gap).
	if err := cl.Started(ctx); err != nil {
		return fmt.Errorf("announce the node to the control plane: %w", err)
	}
	node, err := call.NewNode(c.callConfig(spool, fs), c.prov, log)
	if err != nil {
		return err
	}
	defer node.Close(context.Background())
	var slots call.Slots
	if s, ok := realtime.SlotsOf(e.coord); ok {
		slots = s
	}
	mcpTools := mcp.NewCallCatalog(cl, mcp.NewConnector(mcp.ConnectorConfig{AllowLoopback: c.WebhookAllowLoopback, Timeout: 30 * time.Second}), log)
	rt, err := node.Connect(call.Control{Admit: cl, Record: cl, Finish: cl, Tools: cl, Trunks: cl, Credentials: cl, MCP: mcpTools, Knowledge: cl}, slots)
	if err != nil {
		node.Drain(context.Background())
		return err
	}
	// openRedisCoord's coordinator keeps the registry and the commands.
	reg := e.coord.(interface {
		coord.Registry
		coord.Commander
	})
	// Outbound calls come as commands: follow them before registering.
	if err := cluster.FollowDials(ctx, reg, c.NodeID, c.ClusterSecret, node.Phone.Dial, cl, log); err != nil {
		node.Drain(context.Background())
		return err
	}
	// Whispers too (docs/decisions.md "Live listen and whisper").
	if err := cluster.FollowWhispers(ctx, reg, c.NodeID, c.ClusterSecret, node.Whisper, log); err != nil {
		node.Drain(context.Background())
		return err
	}
	// The simulated caller of the runs the control plane places here.
	simr, err := newSimulator(log, c.call.Phone.Addr, node.PhoneOn, node.Phone.Dial, llm.OpenAIConfig{BaseURL: c.prov.LLMBaseURL, APIKey: c.prov.LLMAPIKey, Model: c.prov.LLMModel})
	if err != nil {
		node.Drain(context.Background())
		return err
	}
	defer simr.close()
	m := cluster.Media{ID: c.NodeID, Simulator: simr, HTTPAddr: c.HTTPAddr, PublicURL: c.PublicURL, Realtime: rt, Secret: c.ClusterSecret, Live: node.Live, Drain: node.Drain, DrainTimeout: c.drainTimeout,
		Listen: node.ListenHandler(calls.ListenKey([]byte(c.ClusterSecret))), Listenable: node.Listenable,
		Metrics: control.MediaMetrics(node.Stats.Read)}
	if node.Browser != nil {
		m.Browser = node.Browser
	}
	if node.PhoneOn {
		m.Verifier = node.Phone
	}
	return cluster.RunMedia(ctx, m, reg, log)
}
