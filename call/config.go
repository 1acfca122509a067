package call

import (
	"crypto/tls"
	"net/netip"
	"sync/atomic"
	"time"
)

// Config is the live call's configuration on a node: values only, zero
// means the default.
type Config struct {
	// BlobDir is where recordings go (recordings/<org>/<call>.wav); empty
	// records nothing.
	BlobDir string
	// Model is passed to the LLM as the model (empty: the provider's own).
	Model string
	// Loopback makes phone and browser calls play each caller turn back
	// with no STT, model or TTS: the whole media path without conversing.
	Loopback bool

	Phone    PhoneConfig
	Browser  BrowserConfig
	Realtime RealtimeConfig
}

// PhoneConfig is the SIP/RTP front door's.
type PhoneConfig struct {
	// Addr is the SIP address for UDP and TCP (TLS on its port + 1).
	// Default 127.0.0.1:5060.
	Addr string
	// AddrRequired makes a taken Addr an error; otherwise the node runs
	// without telephony.
	AddrRequired bool
	// Advertise is the host put in Contact headers and SDP.
	Advertise string
	// Register makes outbound trunks REGISTER first.
	Register bool
	// Trusted sources skip the per-source SIP rate limit.
	Trusted []netip.Prefix
	// TLS is the certificate of SIP over TLS (none: no TLS).
	TLS tls.Certificate
	// RTPLow and RTPHigh bound the RTP port range. Default 10000-20000.
	RTPLow, RTPHigh int
	// MaxCalls caps the node's phone calls; more INVITEs and OPTIONS
	// probes get 503 (0: no cap).
	MaxCalls int
	// NoPrefetch turns the pacer's prefetching off.
	NoPrefetch bool
	// PacerRealtime, when not 0, runs the node pacer's workers in
	// SCHED_FIFO at this priority, woken by the kernel rather than the
	// Go scheduler (pace.Config.Realtime), and gives the process a P per
	// worker beyond its cores so that a woken worker finds one free.
	PacerRealtime int
}

// BrowserConfig is the WebRTC front door's.
type BrowserConfig struct {
	// UDPAddr is the one UDP address of every browser call. Default :50000.
	UDPAddr string
	// AddrRequired makes an unusable UDPAddr an error; otherwise the node
	// runs without browser calls.
	AddrRequired bool
	// PublicIPs are announced instead of the interface addresses.
	PublicIPs []string
	// TURN servers, with static credentials or a shared Secret whose
	// credentials last TURNTTL (default 24 h).
	TURN                   []string
	TURNUser, TURNPassword string
	TURNSecret             string
	TURNTTL                time.Duration
	// MaxSessions caps the node's browser calls (default 500).
	MaxSessions int
}

// RealtimeConfig is the realtime WebSocket front door's.
type RealtimeConfig struct {
	// OrgSessions caps an organization's concurrent sessions (0: none).
	OrgSessions int
	// Loopback plays each caller turn back (no STT, model or TTS).
	Loopback bool
	// DeltaFrames is the 20 ms frames of one output delta (default 1).
	DeltaFrames int
}

func (c Config) withDefaults() Config {
	if c.Phone.Addr == "" {
		c.Phone.Addr = "127.0.0.1:5060"
	}
	if c.Phone.RTPLow == 0 && c.Phone.RTPHigh == 0 {
		c.Phone.RTPLow, c.Phone.RTPHigh = 10000, 20000
	}
	if c.Browser.UDPAddr == "" {
		c.Browser.UDPAddr = ":50000"
	}
	if c.Browser.MaxSessions == 0 {
		c.Browser.MaxSessions = 500
	}
	return c
}

// Link is the node's way to the control plane. Front doors start before
// the control plane (which takes them as its dialer and browser media)
// and hold the Link; until Set, a call is refused as over capacity.
type Link struct{ p atomic.Pointer[Control] }

// Set wires the control plane.
func (l *Link) Set(c Control) { l.p.Store(&c) }

// get returns the control plane, nil before Set.
func (l *Link) get() *Control {
	if l == nil {
		return nil
	}
	return l.p.Load()
}

// Recorder returns the control plane's Recorder, nil before Set: the
// recorder of a Chain and of Transfers.
func (l *Link) Recorder() Recorder {
	if c := l.get(); c != nil {
		return c.Record
	}
	return nil
}

// MCP returns the control plane's MCP catalog, nil before Set or without
// one: the catalog of MCPTools.
func (l *Link) MCP() MCPCatalog {
	if c := l.get(); c != nil {
		return c.MCP
	}
	return nil
}

// Knowledge returns the control plane's knowledge search, nil before Set
// or without one: the search of KnowledgeTool.
func (l *Link) Knowledge() Knowledge {
	if c := l.get(); c != nil {
		return c.Knowledge
	}
	return nil
}
