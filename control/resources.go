package control

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"time"

	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/control/voices"
)

// ResourcesConfig holds the settings of agents, numbers and calls. Zero
// values mean defaults.
type ResourcesConfig struct {
	// Products are the agent product tiers with their per-minute prices.
	// Empty means DefaultProducts().
	Products []Product
	// DefaultProduct is the tier of agents created without one. Default
	// "storm-base", or the first product when that tier is not configured.
	DefaultProduct string
	// DefaultVoice is the voice of agents created without one. Default
	// "espeak:en-us" when the catalog has it, else the catalog's first voice.
	DefaultVoice string
	// DIDPool lists the operator's demo numbers: DIDs routed to this
	// service, handed out by POST /v1/phone-numbers.
	DIDPool []numbers.DID
	// BlobDir is the local blob store that holds recordings. Default
	// "data/blobs".
	BlobDir string
	// SigningKey keys signed URLs (HMAC-SHA256). Replicas must share it.
	// Empty means a random key per process: URLs then die with it.
	SigningKey []byte
	// AudioURLTTL is how long a signed recording URL stays valid. Default
	// one hour.
	AudioURLTTL time.Duration
	// VerifyTimeout bounds one verify-voip check. Default 20 s.
	VerifyTimeout time.Duration
}

func (c ResourcesConfig) withDefaults() ResourcesConfig {
	if len(c.Products) == 0 {
		c.Products = calllog.DefaultProducts()
	}
	if c.DefaultProduct == "" {
		c.DefaultProduct = c.Products[0].Name
		for _, p := range c.Products {
			if p.Name == "storm-base" {
				c.DefaultProduct = p.Name
			}
		}
	}
	if c.BlobDir == "" {
		c.BlobDir = filepath.Join("data", "blobs")
	}
	if c.AudioURLTTL == 0 {
		c.AudioURLTTL = time.Hour
	}
	if c.VerifyTimeout == 0 {
		c.VerifyTimeout = 20 * time.Second
	}
	return c
}

// WithBrowserMedia hands browser calls to m. Without it the widget and
// mic-session endpoints answer 503 and 502.
func WithBrowserMedia(m BrowserMedia) Option { return func(r *resources) { r.browser = m } }

// Option wires an optional collaborator into the server.
type Option func(*resources)

// WithDialer hands outbound calls (POST /v1/call) to d. Without a dialer
// that endpoint answers 503.
func WithDialer(d Dialer) Option { return func(r *resources) { r.dialer = d } }

// WithLive reaches the live calls (whisper, listen), listen tokens
// signed with listenKey (calls.ListenKey of a secret the nodes that
// check them share). Without it those routes answer 503.
func WithLive(l calls.Live, listenKey []byte) Option {
	return func(r *resources) { r.live, r.listenKey = l, listenKey }
}

// WithVoIPVerifier checks trunks for verify-voip with v. Without one that
// endpoint answers 503.
func WithVoIPVerifier(v numbers.VoIPVerifier) Option { return func(r *resources) { r.verifier = v } }

// WithVoiceProviders sets the TTS providers whose voices form the catalog.
// Default: the offline espeak-ng voices.
func WithVoiceProviders(p ...voices.Provider) Option {
	return func(r *resources) { r.providers = p }
}

// resources is the server's state for agents, numbers and calls.
type resources struct {
	cfg      ResourcesConfig
	products map[string]Product
	dialer   Dialer
	live     calls.Live
	// listenKey signs listen tokens; listen is where the socket is
	// served in this process (serve mounts the node's handler).
	listenKey []byte
	listen    calls.ListenSocket
	verifier  numbers.VoIPVerifier
	browser   BrowserMedia
	// providers and catalog: the catalog is loaded once, at New; TTS
	// providers' voice lists change with deployments, not at run time.
	providers []voices.Provider
	catalog   *voices.Catalog
	signKey   []byte
}

func (s *Server) initResources(opts []Option) error {
	r := &resources{cfg: s.cfg.Resources.withDefaults(), providers: []voices.Provider{voices.Espeak{}}}
	for _, o := range opts {
		o(r)
	}
	r.products = map[string]Product{}
	for _, p := range r.cfg.Products {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("control: product %q: %w", p.Name, err)
		}
		if _, dup := r.products[p.Name]; dup {
			return fmt.Errorf("control: product %q is listed twice", p.Name)
		}
		r.products[p.Name] = p
	}
	if _, ok := r.products[r.cfg.DefaultProduct]; !ok {
		return fmt.Errorf("control: default product %q is not a configured product", r.cfg.DefaultProduct)
	}
	nums, err := numbers.New(numbers.Config{DIDPool: r.cfg.DIDPool, VerifyTimeout: r.cfg.VerifyTimeout}, s.log, numbers.Stores{
		Numbers: s.store.Numbers, Demo: s.store.Numbers, Imports: s.store.Numbers, Transfers: s.store.Numbers, Labels: s.store.Numbers, Trunks: s.store.Numbers, Agents: s.store.Agents,
	}, r.verifier)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	s.numbers = nums
	r.catalog = voices.Load(context.Background(), r.providers, s.log)
	switch {
	case r.cfg.DefaultVoice != "":
		if !r.catalog.Has(r.cfg.DefaultVoice) {
			return fmt.Errorf("control: default voice %q is not in the voice catalog", r.cfg.DefaultVoice)
		}
	case r.catalog.Has("espeak:en-us"):
		r.cfg.DefaultVoice = "espeak:en-us"
	case len(r.catalog.Voices()) > 0:
		r.cfg.DefaultVoice = r.catalog.Voices()[0].Name
	}
	r.signKey = r.cfg.SigningKey
	if len(r.signKey) == 0 {
		r.signKey = make([]byte, 32)
		if _, err := rand.Read(r.signKey); err != nil {
			return fmt.Errorf("control: signing key: %w", err)
		}
	}
	s.res = r
	s.calls = calllog.New(calllog.Config{Products: r.products, DefaultProduct: r.cfg.DefaultProduct}, s.log, calllog.Stores{
		Calls: s.store.Calls, Agents: s.store.Agents, Balances: s.store.Billing, Trunks: s.store.Numbers, Events: s.store.Outbox,
	}, agentSchema{r: r}, r.dialer)
	s.browser = browser.New(browser.Config{PublicURL: s.cfg.PublicURL, SigningKey: r.signKey}, s.log, r.browser, s.calls, s.store.Calls, agentSchema{r: r})
	return nil
}
