package webhook

import (
	"net"
	"net/url"
	"strings"
)

// CheckURL is the one rule for every URL voiced sends requests to
// (webhook endpoints, the legacy webhook, publishable-key webhooks, and
// every outbound URL after them). It returns the URL to store, or a
// message for the field's 400 error:
//   - https, or http only for localhost or 127.0.0.1 (spec 4.15);
//   - no credentials (they would be sent wherever it points and stored in
//     clear);
//   - a numeric IPv4 host in any form a resolver or browser reads
//     (2130706433, 0177.0.0.1, 127.1) is stored as the address it names,
//     so the guard judges what a browser would reach, and a number that is
//     no address is refused;
//   - at most 2048 characters; the fragment is dropped.
//
// Whether the address is public is decided at every connection (NewClient's
// dialer), after resolution, not here.
func CheckURL(raw string) (string, string) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return "", "This field may not be blank."
	case len(raw) > 2048:
		return "", "Ensure this field has no more than 2048 characters."
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", "Enter a valid URL."
	}
	if u.User != nil {
		return "", "The URL must not contain credentials."
	}
	if ip, numeric, err := numericIPv4(u.Hostname()); numeric {
		if err != nil {
			return "", "Enter a valid URL."
		}
		host := ip.String()
		if p := u.Port(); p != "" {
			host = net.JoinHostPort(host, p)
		}
		u.Host = host
	}
	if h := u.Hostname(); u.Scheme == "http" && h != "localhost" && h != "127.0.0.1" {
		return "", "The URL must use https (http is allowed only for localhost or 127.0.0.1)."
	}
	u.Fragment = ""
	return u.String(), ""
}
