package webrtc

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/voiced/voiced/media"
)

// Config is a Server's settings. Zero values mean the defaults named on
// each field.
type Config struct {
	// UDPAddr is the one UDP address every session's ICE, DTLS and SRTP
	// share (host candidates through pion's UDP mux), e.g. ":3478" or
	// "0.0.0.0:50000". Empty means ":0" (a port picked at start, for tests).
	UDPAddr string
	// PublicIPs replace the host candidates' addresses in answers, for a
	// node behind a 1:1 NAT (a cloud VM with an elastic IP). Empty means
	// the interface addresses are announced as they are.
	PublicIPs []string
	// ICEServers are STUN/TURN servers the node uses for itself: a TURN
	// server gives the node relay candidates, for browsers that cannot
	// reach UDPAddr directly.
	ICEServers []ICEServer
	// TURNSecret is the TURN server's shared secret for time-limited
	// credentials (coturn's use-auth-secret with static-auth-secret): the
	// node and each browser get a username and password made from it
	// (TURNCredentials) instead of a fixed password. When set, the
	// ICEServers' own Username and Credential are not used.
	TURNSecret string
	// TURNCredentialTTL is how long credentials made from TURNSecret stay
	// valid. coturn checks them on every allocation refresh, so it should
	// outlast the longest call. Default 24 h.
	TURNCredentialTTL time.Duration
	// RelayOnly announces relay candidates only (tests of TURN, or a node
	// whose host address must not be exposed). It needs ICEServers.
	RelayOnly bool
	// IncludeLoopback also announces 127.0.0.1 candidates (single-machine
	// setups and tests). Default off.
	IncludeLoopback bool
	// InputRate is the rate of the caller frames ReadFrame returns and
	// OutputRate the rate of the agent frames WriteFrame takes. Default
	// 16000 each (8000, 16000, 24000 or 48000).
	InputRate, OutputRate int
	// MaxSessions bounds the sessions the node runs at once. Default 500.
	MaxSessions int
	// GatherTimeout bounds ICE gathering when answering. Default 5 s.
	GatherTimeout time.Duration
	// ConnectTimeout ends a session whose ICE and DTLS did not complete
	// this long after the answer. Default 20 s.
	ConnectTimeout time.Duration
	// DisconnectedTimeout and FailedTimeout are ICE's consent timers: after
	// DisconnectedTimeout without traffic the connection is disconnected,
	// after FailedTimeout more it failed and the session ends. Defaults
	// 5 s and 10 s.
	DisconnectedTimeout, FailedTimeout time.Duration
	// Bitrate is the Opus bitrate in bits per second. Default 32000.
	Bitrate int
	// The node's stream starts in Opus's CELT-only low-delay mode, which
	// encodes at about half the CPU of SILK (encoding is most of a call's
	// CPU) and measures as well or better on speech at 32 kb/s, but has no
	// in-band FEC. When the browser's RTCP reports FECLossPercent or more
	// loss, the session switches to SILK with in-band FEC (the browser
	// rebuilds a lost packet from the next one) for the rest of the call.
	// Default 3; DisableFEC keeps CELT whatever the loss.
	FECLossPercent int
	DisableFEC     bool
	// Complexity is the Opus encoder's complexity, 1 (cheapest) to 10.
	// Default 1: synthesized speech gains little above it.
	Complexity int
	// SendQueue is how many encoded 20 ms packets WriteFrame may run
	// ahead of the send clock. Default 3 (60 ms).
	SendQueue int
}

// ICEServer is a STUN or TURN server (RFC 8489, RFC 8656).
type ICEServer struct {
	// URLs such as "turn:turn.example.com:3478?transport=udp".
	URLs []string `json:"urls"`
	// Username and Credential authenticate to a TURN server.
	Username   string `json:"username,omitempty"`
	Credential string `json:"credential,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.UDPAddr == "" {
		c.UDPAddr = ":0"
	}
	if c.InputRate == 0 {
		c.InputRate = media.Rate16k
	}
	if c.OutputRate == 0 {
		c.OutputRate = media.Rate16k
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = 500
	}
	if c.GatherTimeout == 0 {
		c.GatherTimeout = 5 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 20 * time.Second
	}
	if c.DisconnectedTimeout == 0 {
		c.DisconnectedTimeout = 5 * time.Second
	}
	if c.FailedTimeout == 0 {
		c.FailedTimeout = 10 * time.Second
	}
	if c.Bitrate == 0 {
		c.Bitrate = 32000
	}
	if c.FECLossPercent == 0 {
		c.FECLossPercent = 3
	}
	if c.Complexity == 0 {
		c.Complexity = 1
	}
	if c.SendQueue == 0 {
		c.SendQueue = 3
	}
	if c.TURNCredentialTTL == 0 {
		c.TURNCredentialTTL = 24 * time.Hour
	}
	return c
}

func (c Config) validate() error {
	bad := func(f string, args ...any) error {
		return fmt.Errorf("%w: "+f, append([]any{ErrBadConfig}, args...)...)
	}
	if _, err := net.ResolveUDPAddr("udp", c.UDPAddr); err != nil {
		return bad("UDPAddr %q: %v", c.UDPAddr, err)
	}
	for _, ip := range c.PublicIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			return bad("PublicIPs: %q is not an IP address", ip)
		}
	}
	for _, s := range c.ICEServers {
		if len(s.URLs) == 0 {
			return bad("ICEServers: a server has no URLs")
		}
		for _, u := range s.URLs {
			if !strings.HasPrefix(u, "stun:") && !strings.HasPrefix(u, "turn:") && !strings.HasPrefix(u, "turns:") {
				return bad("ICEServers: %q is not a stun:, turn: or turns: URL", u)
			}
		}
	}
	if c.TURNSecret != "" {
		turn := false
		for _, s := range c.ICEServers {
			turn = turn || hasTURN(s.URLs)
			if hasTURN(s.URLs) && (s.Username != "" || s.Credential != "") {
				return bad("TURNSecret and a static TURN username or credential exclude each other")
			}
		}
		if !turn {
			return bad("TURNSecret needs a turn: or turns: URL in ICEServers")
		}
	}
	if c.TURNCredentialTTL < time.Minute {
		return bad("TURNCredentialTTL %v: want at least a minute", c.TURNCredentialTTL)
	}
	if c.RelayOnly && len(c.ICEServers) == 0 {
		return bad("RelayOnly needs a TURN server in ICEServers")
	}
	for name, r := range map[string]int{"InputRate": c.InputRate, "OutputRate": c.OutputRate} {
		if media.ValidateRate(r) != nil {
			return bad("%s %d: want 8000, 16000, 24000 or 48000", name, r)
		}
	}
	switch {
	case c.MaxSessions < 0:
		return bad("MaxSessions %d is negative", c.MaxSessions)
	case c.Bitrate < 6000 || c.Bitrate > 510000:
		return bad("Bitrate %d: want 6000-510000", c.Bitrate)
	case c.FECLossPercent < 1 || c.FECLossPercent > 100:
		return bad("FECLossPercent %d: want 1-100", c.FECLossPercent)
	case c.Complexity < 1 || c.Complexity > 10:
		return bad("Complexity %d: want 1-10", c.Complexity)
	case c.SendQueue < 1 || c.SendQueue > 50:
		return bad("SendQueue %d: want 1-50", c.SendQueue)
	case c.GatherTimeout < 0 || c.ConnectTimeout < 0 || c.DisconnectedTimeout < 0 || c.FailedTimeout < 0:
		return bad("timeouts may not be negative")
	}
	return nil
}
