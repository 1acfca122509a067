package sip

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/voiced/voiced/sip/sdp"
)

// Trunk is a VoIP connection calls leave through (and arrive from).
type Trunk struct {
	// Host and Port address the trunk's SIP server; Port 0 means 5060
	// (5061 for TLS).
	Host string
	Port int
	// Transport is "udp", "tcp" or "tls"; empty means udp.
	Transport string
	// Username and Password answer digest challenges; empty Password
	// means we never authenticate.
	Username, Password string
	// OutboundProxy ("host" or "host:port") is where requests are sent
	// when set; the Request-URI still names Host.
	OutboundProxy string
	// Codecs limits the audio codecs ("PCMU", "PCMA", "opus"); empty
	// means all we support.
	Codecs []string
	// Register sends REGISTER (and keeps it fresh) before the first call
	// through this trunk, for providers that only accept calls from
	// registered users.
	Register bool
}

// InboundTrunk is what the Server needs to know about the VoIP
// connection a dialed number belongs to.
type InboundTrunk struct {
	// Allowed lists the addresses (single IPs as /32 or /128) the
	// connection accepts calls from.
	Allowed []netip.Prefix
	// Host and OutboundProxy are the connection's servers: calls from
	// their resolved addresses are allowed too.
	Host, OutboundProxy string
	// Codecs limits the audio codecs as in Trunk.
	Codecs []string
	// Outbound is how calls leave through the connection; transfers of
	// the call dial through it (nil: the call has no outbound route).
	Outbound *Trunk
}

// TrunkLookup finds the VoIP connection of a dialed number. ok is false
// for numbers that are not on one (demo numbers, unknown numbers): those
// are not source-checked.
type TrunkLookup interface {
	InboundTrunk(ctx context.Context, number string) (t InboundTrunk, ok bool, err error)
}

// codecsFor returns the formats we may use with a trunk that allows
// names (all we support when names is empty), telephone-event always.
func codecsFor(names []string) []sdp.Codec {
	all := sdp.Supported()
	if len(names) == 0 {
		return all
	}
	var out []sdp.Codec
	for _, c := range all {
		if c.IsDTMF() {
			out = append(out, c)
			continue
		}
		for _, n := range names {
			if strings.EqualFold(strings.TrimSpace(n), c.Name) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// sourceAllowed reports whether src may call a number on t: it is in
// t.Allowed or is an address of t.Host or t.OutboundProxy.
func sourceAllowed(ctx context.Context, r *net.Resolver, t InboundTrunk, src netip.Addr) bool {
	src = src.Unmap()
	for _, p := range t.Allowed {
		if p.Contains(src) {
			return true
		}
	}
	for _, h := range []string{t.Host, t.OutboundProxy} {
		if h == "" {
			continue
		}
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		if a, err := netip.ParseAddr(h); err == nil {
			if a.Unmap() == src {
				return true
			}
			continue
		}
		addrs, err := r.LookupNetIP(ctx, "ip", h)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if a.Unmap() == src {
				return true
			}
		}
	}
	return false
}

// target returns where requests to t go: transport, Request-URI host
// part and the next hop (proxy or host) as host:port.
func (t Trunk) target() (transport, uriHost string, uriPort int, hop string, err error) {
	transport = strings.ToUpper(t.Transport)
	if transport == "" {
		transport = "UDP"
	}
	if transport != "UDP" && transport != "TCP" && transport != "TLS" {
		return "", "", 0, "", fmt.Errorf("%w: transport %q", ErrBadTrunk, t.Transport)
	}
	if t.Host == "" {
		return "", "", 0, "", fmt.Errorf("%w: no host", ErrBadTrunk)
	}
	port := t.Port
	if port == 0 {
		port = 5060
		if transport == "TLS" {
			port = 5061
		}
	}
	if port < 1 || port > 65535 {
		return "", "", 0, "", fmt.Errorf("%w: port %d", ErrBadTrunk, t.Port)
	}
	hop = net.JoinHostPort(t.Host, strconv.Itoa(port))
	if p := t.OutboundProxy; p != "" {
		if _, _, err := net.SplitHostPort(p); err != nil {
			def := "5060"
			if transport == "TLS" {
				def = "5061"
			}
			p = net.JoinHostPort(p, def)
		}
		hop = p
	}
	return transport, t.Host, port, hop, nil
}
