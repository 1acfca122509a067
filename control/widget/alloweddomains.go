package widget

import (
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/voiced/voiced/control/api"
)

// Allowed-domain rules of publishable keys (spec section 4.4): an entry is
// an exact host, or "*.example.com", which matches every subdomain of
// example.com at any depth but not example.com itself. localhost and
// 127.0.0.1 are always allowed, so a developer can try a key locally.
// Matching compares host names only: the scheme and port of the Origin do
// not matter.

// maxAllowedDomains bounds one key's list.
const maxAllowedDomains = 100

// msgDomainsRequired is the 400 message of an empty list.
const msgDomainsRequired = "At least one domain is required."

// checkAllowedDomains validates and normalizes a list of allowed domains:
// lower case, no trailing dot, a URL or host:port reduced to its host,
// duplicates removed keeping order. Problems are added to f.
func checkAllowedDomains(f api.Fields, in []string) []string {
	if len(in) == 0 {
		f.Add("allowed_domains", msgDomainsRequired)
		return nil
	}
	if len(in) > maxAllowedDomains {
		f.Add("allowed_domains", "Ensure this field has no more than 100 elements.")
		return nil
	}
	out := make([]string, 0, len(in))
	for _, raw := range in {
		d, msg := normalizeDomain(raw)
		if msg != "" {
			f.Add("allowed_domains", msg)
			continue
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// normalizeDomain returns the canonical form of one entry, or a message
// saying what is wrong with it.
func normalizeDomain(raw string) (string, string) {
	d := strings.ToLower(strings.TrimSpace(raw))
	if d == "" {
		return "", "Domains may not be blank."
	}
	if strings.Contains(d, "://") {
		u, err := url.Parse(d)
		if err != nil || u.Hostname() == "" {
			return "", quoteDomain(raw) + " is not a valid domain."
		}
		d = u.Hostname()
	} else if strings.ContainsAny(d, "/?#@") {
		return "", quoteDomain(raw) + " is not a valid domain: give a host such as example.com or *.example.com, without a path."
	} else if h, _, err := net.SplitHostPort(d); err == nil {
		d = h
	}
	d = strings.TrimSuffix(d, ".")
	if d == "*" || d == "*.*" || strings.HasPrefix(d, "*.*") {
		return "", quoteDomain(raw) + " is a bare wildcard, which would allow any site; use a domain such as *.example.com."
	}
	host, wild := strings.CutPrefix(d, "*.")
	if strings.Contains(host, "*") {
		return "", quoteDomain(raw) + " is not a valid domain: a wildcard may only be the first label, as in *.example.com."
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if wild {
			return "", quoteDomain(raw) + " is not a valid domain: IP addresses cannot have wildcards."
		}
		return a.String(), ""
	}
	if !validHostname(host) {
		return "", quoteDomain(raw) + " is not a valid domain."
	}
	if wild && !strings.Contains(host, ".") {
		return "", quoteDomain(raw) + " is too broad: a wildcard needs a registrable domain such as *.example.com."
	}
	return d, ""
}

func quoteDomain(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return `"` + s + `"`
}

// validHostname checks RFC 1123 host name syntax in ASCII (internationalized
// names are given in their xn-- form).
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// originHost returns the lower-case host of an Origin header value, or ""
// when it is missing, "null" or not an http(s) origin.
func originHost(origin string) string {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// originAllowed reports whether a page at origin may use a key with the
// allowed domains list.
func originAllowed(origin string, domains []string) bool {
	host := originHost(origin)
	if host == "" {
		return false
	}
	if host == "localhost" || host == "127.0.0.1" {
		return true
	}
	for _, d := range domains {
		if suffix, ok := strings.CutPrefix(d, "*"); ok {
			// suffix is ".example.com": a subdomain, never the bare domain.
			if len(host) > len(suffix) && strings.HasSuffix(host, suffix) {
				return true
			}
			continue
		}
		if host == d {
			return true
		}
	}
	return false
}
