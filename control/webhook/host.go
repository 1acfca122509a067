package webhook

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// errBadIPv4 means a host that ends in a number is not a valid IPv4
// address in any form a resolver or browser accepts (e.g. 1.2.3.999).
var errBadIPv4 = errors.New("invalid numeric IPv4 host")

// numericIPv4 reads host the way the WHATWG URL parser (and inet_aton,
// which getaddrinfo uses) does: a host whose last label is a number is an
// IPv4 address in one of its numeric forms: 1 to 4 parts separated by
// dots, each decimal, octal (leading 0) or hexadecimal (0x), the last part
// filling the bytes that remain (2130706433, 0177.0.0.1, 127.1,
// 0x7f.1 are all 127.0.0.1). numeric is false for a host name, which is
// left to DNS; err is set for a number that is no address (1.2.3.999),
// which a browser refuses too. A single trailing dot is allowed.
func numericIPv4(host string) (addr netip.Addr, numeric bool, err error) {
	host = strings.TrimSuffix(host, ".")
	parts := strings.Split(host, ".")
	if !isNumberLabel(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, errBadIPv4
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, true, errBadIPv4
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, true, errBadIPv4
			}
			v |= n << (8 * (3 - i))
			continue
		}
		// The last part fills the 4-i bytes that remain.
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, true, errBadIPv4
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// isNumberLabel reports whether a label is a number in the URL parser's
// sense: decimal digits, or 0x followed by hex digits (possibly none).
func isNumberLabel(s string) bool {
	if s == "" {
		return false
	}
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		for _, c := range s[2:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isHex(c rune) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// parseIPv4Part reads one part: 0x hex ("0x" alone is 0), 0-prefixed
// octal, or decimal, at most 32 bits.
func parseIPv4Part(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	n, err := strconv.ParseUint(p, base, 32)
	return n, err == nil
}
