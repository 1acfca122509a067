package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/call"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/control/numbers"
)

// config is every setting of voiced serve, migrate and admin. Each flag has
// a VOICED_* environment twin; a flag given on the command line wins.
type config struct {
	DataDir        string
	HTTPAddr       string
	DatabaseURL    string
	RedisURL       string
	SIPTLSCert     string
	SIPTLSKey      string
	SIPTrusted     string
	RTPPorts       string
	PublicURL      string
	SecretKey      string
	DevCreditCents int64
	NumberFeeCents int64
	LogLevel       string
	LogFormat      string
	AccessLog      bool
	PprofAddr      string
	DIDPool        string
	Products       string
	AudioURLTTL    string

	StripeAPIKey         string
	StripeAPIBase        string
	StripeWebhookSecret  string
	WebhookAllowLoopback bool
	MonitoringToken      string

	RealtimeDeltaMs            int64
	WebRTCPublicIP, WebRTCTURN string
	HugePages                  bool
	RTPPrefetch                bool
	WebRTCTURNTTL              string
	DrainTimeout               string
	drainTimeout               time.Duration

	// The roles' link: the shared secret, the control role's internal
	// API (address, TLS) and a media node's way to it and name.
	ClusterSecret, InternalAddr, InternalTLSCert, InternalTLSKey string
	ControlURL, ControlCA, NodeID                                string

	// Embed is knowledge search's embeddings provider.
	Embed knowledge.EmbedConfig

	// call and prov take the live call's flags as they are; validate
	// fills the parsed ones.
	call call.Config
	prov call.ProvidersConfig

	didPool     []numbers.DID
	products    []control.Product
	audioURLTTL time.Duration
}

type flagSpec struct {
	name, env, def, usage string
	target                any
}

// bindFlags registers the flags selected by names on fs.
func bindFlags(fs *flag.FlagSet, c *config, names ...string) []flagSpec {
	all := []flagSpec{
		{"data-dir", "VOICED_DATA_DIR", "./data", "directory for the SQLite database, the secret key and local files", &c.DataDir},
		{"database-url", "VOICED_DATABASE_URL", "", "empty for SQLite in the data dir, sqlite://PATH, or postgres://USER@HOST:PORT/DB", &c.DatabaseURL},
		{"http-addr", "VOICED_HTTP_ADDR", "127.0.0.1:8080", "HTTP listen address (host:port) for the API", &c.HTTPAddr},
		{"redis-url", "VOICED_REDIS_URL", "", "empty for in-process coordination, or redis://HOST:PORT/DB for scale-out", &c.RedisURL},
		{"sip-addr", "VOICED_SIP_ADDR", "127.0.0.1:5060", "SIP listen address (host:port) for the telephony front door", &c.call.Phone.Addr},
		{"sip-tls-cert", "VOICED_SIP_TLS_CERT", "", "PEM certificate (chain) for SIP over TLS on the --sip-addr port + 1; empty = no TLS", &c.SIPTLSCert},
		{"sip-tls-key", "VOICED_SIP_TLS_KEY", "", "PEM private key of --sip-tls-cert", &c.SIPTLSKey},
		{"sip-advertise", "VOICED_SIP_ADVERTISE", "", "host or IP put in SIP Contact headers and SDP, the node's public address behind NAT; empty = the --sip-addr IP", &c.call.Phone.Advertise},
		{"sip-register", "VOICED_SIP_REGISTER", "false", "REGISTER with a VoIP connection (kept fresh) before placing calls through it, for providers that want it", &c.call.Phone.Register},
		{"sip-trusted", "VOICED_SIP_TRUSTED", "", "IPs or CIDRs, comma-separated, exempt from the per-source SIP rate limit: your carriers' SBCs, the Kamailio dispatcher in scale-out", &c.SIPTrusted},
		{"sip-max-calls", "VOICED_SIP_MAX_CALLS", "0", "most phone calls this node runs at once; past it INVITEs and OPTIONS probes get 503, so a dispatcher in front (Kamailio) sends calls elsewhere (0 = no cap)", &c.call.Phone.MaxCalls},
		{"drain-timeout", "VOICED_DRAIN_TIMEOUT", "30s", "on SIGTERM or SIGINT the node takes no new calls (OPTIONS and INVITE answer 503) and gives the calls in progress this long to end before hanging them up with end reason node_shutdown (Go duration, 0s to 24h)", &c.DrainTimeout},
		{"rtp-ports", "VOICED_RTP_PORTS", "10000-20000", "UDP port range LOW-HIGH for RTP media", &c.RTPPorts},
		{"rtp-prefetch", "VOICED_RTP_PREFETCH", "true", "while the node pacer runs one call, have the processor fetch what the next calls will touch (their sessions, jitter buffers, agents' state), so the cache misses of a tick overlap instead of coming one pointer at a time (docs/decisions.md)", &c.RTPPrefetch},
		{"rtp-pacer-realtime", "VOICED_RTP_PACER_REALTIME", "10", "run the node pacer's workers as SCHED_FIFO threads at this priority (1-99), woken by the kernel instead of Go's scheduler, with a Go P per worker beyond the cores (GOMAXPROCS doubled); without root or CAP_SYS_NICE, or with 0, Go's scheduler wakes them (docs/decisions.md, \"Pacer wake-ups without the Go scheduler\")", &c.call.Phone.PacerRealtime},
		{"huge-pages", "VOICED_HUGE_PAGES", "true", "ask Linux for transparent huge pages for the Go heap, where it gives them on request (transparent_hugepage \"madvise\"): fewer TLB misses per call and tick, for a little memory (docs/decisions.md)", &c.HugePages},
		{"public-url", "VOICED_PUBLIC_URL", "", "externally visible base URL (default http://<http-addr>)", &c.PublicURL},
		{"secret-key", "VOICED_SECRET_KEY", "", "32-byte key (hex or base64) that encrypts stored secrets; empty = <data-dir>/secret.key, created on first use", &c.SecretKey},
		{"dev-credit-cents", "VOICED_DEV_CREDIT_CENTS", "1000", "starting credit granted to the first organization on an empty database", &c.DevCreditCents},
		{"number-fee-cents", "VOICED_NUMBER_FEE_CENTS", "100", "monthly fee of each active demo number (pool DID), charged once per calendar month; 0 turns it off", &c.NumberFeeCents},
		{"log-level", "VOICED_LOG_LEVEL", "info", "debug, info, warn or error", &c.LogLevel},
		{"log-format", "VOICED_LOG_FORMAT", "text", "text or json", &c.LogFormat},
		{"access-log", "VOICED_ACCESS_LOG", "true", "log one line per HTTP request", &c.AccessLog},
		{"pprof-addr", "VOICED_PPROF_ADDR", "", "listen address (host:port) for Go's profiler (/debug/pprof/, unauthenticated: keep it on loopback); empty = off", &c.PprofAddr},
		{"did-pool", "VOICED_DID_POOL", "", "CSV file of demo numbers routed to this service: number[,area_code[,city[,state]]] per line; empty = no demo numbers", &c.DIDPool},
		{"products", "VOICED_PRODUCTS", "storm-mini=5,storm-base=9,storm-pro=15", "agent product tiers as name=cents_per_minute, comma-separated (storm-base, else the first, is the default)", &c.Products},
		{"audio-url-ttl", "VOICED_AUDIO_URL_TTL", "1h", "how long a signed call-recording URL stays valid (Go duration, 1m to 168h)", &c.AudioURLTTL},
		{"stripe-api-key", "VOICED_STRIPE_API_KEY", "", "Stripe secret key (sk_live_..., sk_test_... or a restricted rk_...); empty = no payment provider (top-ups answer 503; add credit with voiced admin add-credit)", &c.StripeAPIKey},
		{"stripe-api-base", "VOICED_STRIPE_API_BASE", "", "Stripe API base URL; empty = https://api.stripe.com; http://127.0.0.1:12111 for stripe-mock", &c.StripeAPIBase},
		{"stripe-webhook-secret", "VOICED_STRIPE_WEBHOOK_SECRET", "", "signing secret (whsec_...) of the Stripe events posted to /v1/billing/provider-events; empty refuses them", &c.StripeWebhookSecret},
		{"monitoring-token", "VOICED_MONITORING_TOKEN", "", "shared token the monitoring receivers (/v1/monitoring/azure-alert, glitchtip-alert, auto-ack) require as ?token=; empty turns them off (404)", &c.MonitoringToken},
		{"webhook-allow-loopback", "VOICED_WEBHOOK_ALLOW_LOOPBACK", "true", "let webhook deliveries reach http://localhost and 127.0.0.1 (other private and internal addresses are always refused); turn off on shared servers", &c.WebhookAllowLoopback},
		{"llm-base-url", "VOICED_LLM_BASE_URL", "", "OpenAI-compatible chat completions API root up to /v1 (OpenAI, Ollama, vLLM, llama.cpp); empty = the offline echo model that repeats the caller", &c.prov.LLMBaseURL},
		{"llm-api-key", "VOICED_LLM_API_KEY", "", "API key for --llm-base-url (empty for local servers)", &c.prov.LLMAPIKey},
		{"llm-model", "VOICED_LLM_MODEL", "", "model name for --llm-base-url (empty = the client's default)", &c.prov.LLMModel},
		{"tts-base-url", "VOICED_TTS_BASE_URL", "", "OpenAI-compatible speech API root up to /v1; empty = espeak-ng (offline)", &c.prov.TTSBaseURL},
		{"tts-api-key", "VOICED_TTS_API_KEY", "", "API key for --tts-base-url", &c.prov.TTSAPIKey},
		{"tts-model", "VOICED_TTS_MODEL", "", "speech model for --tts-base-url (empty = tts-1)", &c.prov.TTSModel},
		{"stt-base-url", "VOICED_STT_BASE_URL", "", "OpenAI-compatible transcription API root up to /v1 (OpenAI, faster-whisper, whisper.cpp, vLLM); empty = offline PocketSphinx (en-US) for realtime sessions", &c.prov.STTBaseURL},
		{"stt-api-key", "VOICED_STT_API_KEY", "", "API key for --stt-base-url", &c.prov.STTAPIKey},
		{"stt-model", "VOICED_STT_MODEL", "", "transcription model for --stt-base-url (empty = whisper-1)", &c.prov.STTModel},
		{"embed-base-url", "VOICED_EMBED_BASE_URL", "", "OpenAI-compatible embeddings API root up to /v1 (OpenAI, Ollama, vLLM, llama.cpp) for semantic knowledge search, fused with BM25; empty = BM25 alone", &c.Embed.BaseURL},
		{"embed-api-key", "VOICED_EMBED_API_KEY", "", "API key for --embed-base-url (empty for local servers)", &c.Embed.APIKey},
		{"embed-model", "VOICED_EMBED_MODEL", "", "embedding model for --embed-base-url (empty = text-embedding-3-small); changing it re-embeds every document", &c.Embed.Model},
		{"realtime-delta-ms", "VOICED_REALTIME_DELTA_MS", "20", "audio per realtime output delta once a response plays (20-1000, a multiple of 20): bigger deltas wake clients less often but delay a response's first audio by the difference", &c.RealtimeDeltaMs},
		{"realtime-org-sessions", "VOICED_REALTIME_ORG_SESSIONS", "50", "concurrent realtime WebSocket sessions per organization (0 = no cap)", &c.call.Realtime.OrgSessions},
		{"call-loopback", "VOICED_CALL_LOOPBACK", "false", "phone and browser calls play each caller turn back with no STT, model or TTS (load tests of the media path); off = the number's agent with the node's providers", &c.call.Loopback},
		{"realtime-loopback", "VOICED_REALTIME_LOOPBACK", "false", "realtime sessions play each caller turn back with no STT, model or TTS (load tests of the media path)", &c.call.Realtime.Loopback},
		{"webrtc-udp-addr", "VOICED_WEBRTC_UDP_ADDR", ":50000", "UDP address (host:port) every browser call's WebRTC media shares (one port to open)", &c.call.Browser.UDPAddr},
		{"webrtc-public-ip", "VOICED_WEBRTC_PUBLIC_IP", "", "public IPs, comma-separated, announced instead of the interface addresses when behind a 1:1 NAT", &c.WebRTCPublicIP},
		{"webrtc-turn", "VOICED_WEBRTC_TURN", "", "TURN server URLs, comma-separated (turn:host:3478?transport=udp), giving browser calls relay candidates", &c.WebRTCTURN},
		{"webrtc-turn-user", "VOICED_WEBRTC_TURN_USER", "", "username for --webrtc-turn", &c.call.Browser.TURNUser},
		{"webrtc-turn-password", "VOICED_WEBRTC_TURN_PASSWORD", "", "password for --webrtc-turn", &c.call.Browser.TURNPassword},
		{"webrtc-turn-secret", "VOICED_WEBRTC_TURN_SECRET", "", "shared secret of the TURN server (coturn use-auth-secret / static-auth-secret): the node and each browser get time-limited credentials made from it instead of --webrtc-turn-user/-password", &c.call.Browser.TURNSecret},
		{"webrtc-turn-ttl", "VOICED_WEBRTC_TURN_TTL", "24h", "validity of credentials made from --webrtc-turn-secret (at least 1m; longer than the longest call, since TURN refreshes need them)", &c.WebRTCTURNTTL},
		{"cluster-secret", "VOICED_CLUSTER_SECRET", "", "shared secret of the internal API between voiced control and voiced media (at least 32 characters; the same on every node)", &c.ClusterSecret},
		{"internal-addr", "VOICED_INTERNAL_ADDR", "127.0.0.1:8081", "listen address (host:port) of the internal API media nodes reach the control plane through; keep it on a private network", &c.InternalAddr},
		{"internal-tls-cert", "VOICED_INTERNAL_TLS_CERT", "", "PEM certificate (chain) to serve the internal API over HTTPS; empty = plain HTTP", &c.InternalTLSCert},
		{"internal-tls-key", "VOICED_INTERNAL_TLS_KEY", "", "PEM private key of --internal-tls-cert", &c.InternalTLSKey},
		{"control-url", "VOICED_CONTROL_URL", "", "the control role's internal API, like http://10.0.0.5:8081 (https:// with --internal-tls-cert there)", &c.ControlURL},
		{"control-ca", "VOICED_CONTROL_CA", "", "PEM CA certificate(s) a media node trusts for an https --control-url; empty = the system's", &c.ControlCA},
		{"node-id", "VOICED_NODE_ID", "", "this media node's name in the registry, stable across restarts (a pod name); empty = <host name>:<SIP port>", &c.NodeID},
		{"webrtc-max-sessions", "VOICED_WEBRTC_MAX_SESSIONS", "500", "most browser calls (widget and mic sessions) this node runs at once", &c.call.Browser.MaxSessions},
	}
	var out []flagSpec
	for _, s := range all {
		if len(names) > 0 && !contains(names, s.name) {
			continue
		}
		usage := fmt.Sprintf("%s (env %s)", s.usage, s.env)
		switch t := s.target.(type) {
		case *string:
			fs.StringVar(t, s.name, s.def, usage)
		case *int64:
			v, _ := strconv.ParseInt(s.def, 10, 64)
			fs.Int64Var(t, s.name, v, usage)
		case *int:
			v, _ := strconv.Atoi(s.def)
			fs.IntVar(t, s.name, v, usage)
		case *bool:
			fs.BoolVar(t, s.name, s.def == "true", usage)
		}
		out = append(out, s)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseFlags parses args, then fills flags not given on the command line
// from their environment variables, then validates. Any error is one line
// that names the flag.
func parseFlags(fs *flag.FlagSet, specs []flagSpec, c *config, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, s := range specs {
		if set[s.name] {
			continue
		}
		if v, ok := os.LookupEnv(s.env); ok {
			if err := fs.Set(s.name, v); err != nil {
				return fmt.Errorf("invalid %s=%q (for --%s): %v", s.env, v, s.name, err)
			}
		}
	}
	return c.validate(set, specs)
}

// validate checks the flags the command takes (specs) and fills the
// parsed forms; each part checks the flags of what it configures.
func (c *config) validate(_ map[string]bool, specs []flagSpec) error {
	has := func(n string) bool {
		for _, s := range specs {
			if s.name == n {
				return true
			}
		}
		return false
	}
	for _, part := range []func(func(string) bool) error{c.validateStore, c.validateAPI, c.validateSIP, c.validatePayments, c.validateCalls, c.validateLog, c.validateCluster} {
		if err := part(has); err != nil {
			return err
		}
	}
	return nil
}

// validateStore checks where state lives: the data dir, the database,
// the coordinator and the secret key.
func (c *config) validateStore(has func(string) bool) error {
	if has("data-dir") && strings.TrimSpace(c.DataDir) == "" {
		return errors.New("invalid --data-dir: must not be empty")
	}
	if has("database-url") && c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		switch {
		case err != nil:
			return fmt.Errorf("invalid --database-url: %v", err)
		case u.Scheme == "postgres" || u.Scheme == "postgresql":
			if u.Host == "" {
				return errors.New("invalid --database-url: postgres URL needs a host, like postgres://user@127.0.0.1:5432/voiced")
			}
		case u.Scheme == "sqlite", u.Scheme == "file":
		default:
			return fmt.Errorf("invalid --database-url %q: use empty (SQLite in --data-dir), sqlite://PATH or postgres://...", c.DatabaseURL)
		}
	}
	if has("redis-url") && c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			return fmt.Errorf("invalid --redis-url %q: %v", c.RedisURL, err)
		}
	}
	if has("secret-key") && c.SecretKey != "" {
		if _, err := decodeKey(c.SecretKey); err != nil {
			return fmt.Errorf("invalid --secret-key: %v", err)
		}
	}
	return nil
}

// validateAPI checks the control plane's flags: its address, public URL,
// products, demo numbers, credit and fees, signed URLs.
func (c *config) validateAPI(has func(string) bool) error {
	if has("http-addr") {
		if err := checkHostPort(c.HTTPAddr); err != nil {
			return fmt.Errorf("invalid --http-addr %q: %v", c.HTTPAddr, err)
		}
	}
	if has("public-url") && c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("invalid --public-url %q: want an absolute http(s) URL like https://voice.example.com", c.PublicURL)
		}
	}
	if has("number-fee-cents") && c.NumberFeeCents < 0 {
		return fmt.Errorf("invalid --number-fee-cents %d: must be >= 0", c.NumberFeeCents)
	}
	if has("dev-credit-cents") && c.DevCreditCents < 0 {
		return fmt.Errorf("invalid --dev-credit-cents %d: must be >= 0", c.DevCreditCents)
	}
	if has("did-pool") && c.DIDPool != "" {
		f, err := os.Open(c.DIDPool)
		if err != nil {
			return fmt.Errorf("invalid --did-pool %q: %v", c.DIDPool, err)
		}
		c.didPool, err = numbers.ParseDIDPool(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("invalid --did-pool %q: %v", c.DIDPool, err)
		}
	}
	if has("products") {
		p, err := calllog.ParseProducts(c.Products)
		if err != nil {
			return fmt.Errorf("invalid --products %q: %v", c.Products, err)
		}
		c.products = p
	}
	if has("audio-url-ttl") {
		d, err := time.ParseDuration(c.AudioURLTTL)
		if err != nil || d < time.Minute || d > 168*time.Hour {
			return fmt.Errorf("invalid --audio-url-ttl %q: want a duration from 1m to 168h, like 1h", c.AudioURLTTL)
		}
		c.audioURLTTL = d
	}
	return nil
}

// validateSIP checks the telephony front door's flags: SIP listeners and
// TLS, the advertised host, trusted sources, RTP ports and pacing.
func (c *config) validateSIP(has func(string) bool) error {
	if !has("sip-addr") {
		return nil // serve's alone
	}
	if err := checkHostPort(c.call.Phone.Addr); err != nil {
		return fmt.Errorf("invalid --sip-addr %q: %v", c.call.Phone.Addr, err)
	}
	if c.SIPTLSCert != "" || c.SIPTLSKey != "" {
		if c.SIPTLSCert == "" || c.SIPTLSKey == "" {
			return errors.New("invalid --sip-tls-cert/--sip-tls-key: give both or neither")
		}
		cert, err := tls.LoadX509KeyPair(c.SIPTLSCert, c.SIPTLSKey)
		if err != nil {
			return fmt.Errorf("invalid --sip-tls-cert %q: %v", c.SIPTLSCert, err)
		}
		c.call.Phone.TLS = cert
	}
	if adv := c.call.Phone.Advertise; adv != "" && (strings.ContainsAny(adv, " /:@;") && net.ParseIP(adv) == nil) {
		return fmt.Errorf("invalid --sip-advertise %q: want a host name or IP address", adv)
	}
	c.call.Phone.Trusted = nil
	for _, f := range commaList(c.SIPTrusted) {
		if p, err := netip.ParsePrefix(f); err == nil {
			c.call.Phone.Trusted = append(c.call.Phone.Trusted, p.Masked())
		} else if ip, err := netip.ParseAddr(f); err == nil {
			c.call.Phone.Trusted = append(c.call.Phone.Trusted, netip.PrefixFrom(ip, ip.BitLen()))
		} else {
			return fmt.Errorf("invalid --sip-trusted %q: %q is not an IP address or CIDR", c.SIPTrusted, f)
		}
	}
	var err error
	c.call.Phone.RTPLow, c.call.Phone.RTPHigh, err = parsePortRange(c.RTPPorts)
	if err != nil {
		return fmt.Errorf("invalid --rtp-ports %q: %v", c.RTPPorts, err)
	}
	if has("sip-max-calls") && c.call.Phone.MaxCalls < 0 {
		return fmt.Errorf("invalid --sip-max-calls %d: must be >= 0", c.call.Phone.MaxCalls)
	}
	if has("drain-timeout") {
		d, err := time.ParseDuration(c.DrainTimeout)
		if err != nil || d < 0 || d > 24*time.Hour {
			return fmt.Errorf("invalid --drain-timeout %q: want a Go duration from 0s to 24h, like 30s or 5m", c.DrainTimeout)
		}
		c.drainTimeout = d
	}
	return nil
}

// validateCalls checks the flags of the calls' providers, the browser
// and realtime front doors.
func (c *config) validateCalls(has func(string) bool) error {
	for _, u := range []struct{ name, v string }{{"llm-base-url", c.prov.LLMBaseURL}, {"tts-base-url", c.prov.TTSBaseURL}, {"stt-base-url", c.prov.STTBaseURL}, {"embed-base-url", c.Embed.BaseURL}} {
		if has(u.name) && u.v != "" {
			if p, err := url.Parse(u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				return fmt.Errorf("invalid --%s %q: want an http(s) URL like http://localhost:11434/v1", u.name, u.v)
			}
		}
	}
	if has("realtime-delta-ms") && (c.RealtimeDeltaMs < 20 || c.RealtimeDeltaMs > 1000 || c.RealtimeDeltaMs%20 != 0) {
		return fmt.Errorf("invalid --realtime-delta-ms %d: must be a multiple of 20 from 20 to 1000", c.RealtimeDeltaMs)
	}
	if has("realtime-org-sessions") && c.call.Realtime.OrgSessions < 0 {
		return fmt.Errorf("invalid --realtime-org-sessions %d: must be >= 0", c.call.Realtime.OrgSessions)
	}
	if has("webrtc-turn-ttl") && c.WebRTCTURNTTL != "" {
		ttl, err := time.ParseDuration(c.WebRTCTURNTTL)
		if err != nil || ttl < time.Minute {
			return fmt.Errorf("invalid --webrtc-turn-ttl %q: want a duration of at least 1m, like 24h", c.WebRTCTURNTTL)
		}
		c.call.Browser.TURNTTL = ttl
	}
	return nil
}

// validateLog checks the logging flags.
func (c *config) validateLog(has func(string) bool) error {
	if has("log-level") && !contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		return fmt.Errorf("invalid --log-level %q: use debug, info, warn or error", c.LogLevel)
	}
	if has("log-format") && c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("invalid --log-format %q: use text or json", c.LogFormat)
	}
	return nil
}

func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port, like 127.0.0.1:8080")
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" && strings.ContainsAny(host, " /") {
		return errors.New("bad host")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return errors.New("port must be a number from 0 to 65535")
	}
	return nil
}

func parsePortRange(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, errors.New("want LOW-HIGH, like 10000-20000")
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, errors.New("want LOW-HIGH, like 10000-20000")
	case lo < 1024 || hi > 65535:
		return 0, 0, errors.New("ports must be within 1024-65535")
	case hi-lo < 1:
		return 0, 0, errors.New("HIGH must be greater than LOW (RTP needs at least one even/odd pair)")
	}
	return lo, hi, nil
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, errors.New("must be 32 bytes as 64 hex characters or base64")
}

// secretKey returns the configured key, or the one in the data dir,
// creating it (mode 0600) on first use.
func (c *config) secretKey() ([]byte, error) {
	if c.SecretKey != "" {
		return decodeKey(c.SecretKey)
	}
	path := filepath.Join(c.DataDir, "secret.key")
	if b, err := os.ReadFile(path); err == nil {
		k, err := decodeKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := randRead(k); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return c.secretKey()
		}
		return nil, err
	}
	defer f.Close()
	if _, err := f.WriteString(hex.EncodeToString(k) + "\n"); err != nil {
		return nil, err
	}
	return k, nil
}
