package widget

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOriginAllowed(t *testing.T) {
	domains := []string{"example.com", "*.shop.example", "10.0.0.7"}
	cases := []struct {
		origin string
		want   bool
	}{
		{"https://example.com", true},
		{"https://EXAMPLE.com:8443", true},
		{"http://example.com", true},
		{"https://www.example.com", false}, // exact host only
		{"https://evilexample.com", false},
		{"https://example.com.evil.net", false},
		{"https://a.shop.example", true},
		{"https://deep.a.shop.example", true},
		{"https://shop.example", false}, // the wildcard does not match the bare domain
		{"https://evilshop.example", false},
		{"http://localhost:3000", true},
		{"http://127.0.0.1:8080", true},
		{"http://10.0.0.7", true},
		{"http://10.0.0.8", false},
		{"https://foreign.example", false},
		{"null", false},
		{"", false},
		{"file:///tmp/x.html", false},
		{"chrome-extension://abc", false},
	}
	for _, c := range cases {
		t.Run(c.origin, func(t *testing.T) {
			require.Equal(t, c.want, originAllowed(c.origin, domains))
		})
	}
	require.True(t, originAllowed("http://localhost", nil), "localhost needs no entry")
}

func TestNormalizeDomain(t *testing.T) {
	good := map[string]string{
		"Example.COM":             "example.com",
		"https://a.example:443/x": "a.example",
		"a.example:8080":          "a.example",
		"*.Example.com.":          "*.example.com",
		"xn--bcher-kva.example":   "xn--bcher-kva.example",
		"127.0.0.1":               "127.0.0.1",
		"localhost":               "localhost",
		"https://[::1]:8443/":     "::1",
	}
	for in, want := range good {
		got, msg := normalizeDomain(in)
		require.Empty(t, msg, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"*", "*.*", "*.*.example", "*.com", "a.*.example", "ex*ample.com", "a b.example", "-a.example", "a/b", "*.10.0.0.1", "bücher.example", ""} {
		_, msg := normalizeDomain(in)
		require.NotEmpty(t, msg, in)
	}
}
