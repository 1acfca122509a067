package webhook

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// nonPublic lists special-purpose ranges (RFC 6890 and successors) that
// net/netip's predicates do not already cover, plus the translation
// prefixes that embed an IPv4 address and could reach a private one.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT, RFC 6598
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking, RFC 2544
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64, RFC 6052
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64, RFC 8215
	netip.MustParsePrefix("2001::/32"),       // Teredo
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("100::/64"),        // discard-only, RFC 6666
}

// isLocalName reports whether host names the local machine in the forms
// the spec allows over plain http: localhost, 127.0.0.1 and ::1.
func isLocalName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Allowed reports whether a connection to ip may be made. loopbackOK is
// true only when the operator allows loopback and the URL named the local
// machine (isLocalName): a public hostname that resolves to 127.0.0.1 is
// still refused.
func Allowed(ip netip.Addr, loopbackOK bool) bool {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return false
	case ip.IsLoopback():
		return loopbackOK
	case ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(),
		ip.IsMulticast(), ip.IsUnspecified():
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// dialer returns a DialContext that refuses non-public destinations. The
// check runs in the socket's Control hook, on the address actually being
// connected to after name resolution, so a hostname that resolves (or
// re-resolves) to an internal address cannot slip through.
func dialer(allowLoopback bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		loopbackOK := allowLoopback && isLocalName(host)
		// A numeric host (2130706433, 0177.0.0.1, 127.1) is the address a
		// browser would reach: judge it here and dial it as such, so it
		// is never sent to DNS as a name. Only the spellings isLocalName
		// names get the loopback allowance.
		if ip, numeric, err := numericIPv4(host); numeric {
			if err != nil {
				return nil, fmt.Errorf("%w: %s is no IPv4 address", ErrBlockedAddress, host)
			}
			if !Allowed(ip, loopbackOK && ip.String() == host) {
				return nil, fmt.Errorf("%w: %s is %s", ErrBlockedAddress, host, ip)
			}
			addr = net.JoinHostPort(ip.String(), port)
		}
		d := net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("%w: %s", ErrBlockedAddress, address)
				}
				if !Allowed(ap.Addr(), loopbackOK) {
					return fmt.Errorf("%w: %s resolves to %s", ErrBlockedAddress, host, ap.Addr())
				}
				return nil
			},
		}
		return d.DialContext(ctx, network, addr)
	}
}

// NewClient returns the HTTP client every outbound webhook request uses:
// guarded dials, no proxy (an environment proxy would bypass the guard),
// no redirects (a 3xx is the answer, and a failure), and timeout as the
// whole-request bound.
func NewClient(allowLoopback bool, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer(allowLoopback),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
