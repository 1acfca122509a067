package digest

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Challenge is one WWW-Authenticate or Proxy-Authenticate header value.
type Challenge struct {
	Realm  string
	Nonce  string
	Opaque string
	// Algorithm is as sent; empty means MD5.
	Algorithm string
	// QOP lists the offered qop values; empty for an RFC 2069 server.
	QOP   []string
	Stale bool
}

// Credentials is one Authorization or Proxy-Authorization header value.
type Credentials struct {
	Username  string
	Realm     string
	Nonce     string
	URI       string
	Response  string
	Algorithm string
	CNonce    string
	// QOP is "auth" or empty; NC is the nonce count, sent as 8 hex
	// digits when QOP is set.
	QOP    string
	NC     uint32
	Opaque string
}

// Options are the request details a response is computed over.
type Options struct {
	// Method is the SIP method, URI the Request-URI as sent.
	Method, URI        string
	Username, Password string
	// CNonce is the client nonce; empty draws 12 random bytes.
	CNonce string
	// NC is the nonce count; 0 means 1.
	NC uint32
}

// strength orders the algorithms we support, strongest last.
var strength = map[string]int{"MD5": 1, "MD5-SESS": 1, "SHA-256": 2, "SHA-256-SESS": 2, "SHA-512-256": 3, "SHA-512-256-SESS": 3}

func newHash(alg string) (func() hash.Hash, bool) {
	switch strings.TrimSuffix(strings.ToUpper(alg), "-SESS") {
	case "", "MD5":
		return md5.New, true
	case "SHA-256":
		return sha256.New, true
	case "SHA-512-256":
		return sha512.New512_256, true
	}
	return nil, false
}

// ParseChallenge reads a challenge header value ("Digest realm=...").
func ParseChallenge(v string) (Challenge, error) {
	params, err := parseHeader(v)
	if err != nil {
		return Challenge{}, err
	}
	c := Challenge{Realm: params["realm"], Nonce: params["nonce"], Opaque: params["opaque"], Algorithm: params["algorithm"],
		Stale: strings.EqualFold(params["stale"], "true")}
	if q, ok := params["qop"]; ok {
		for _, o := range strings.Split(q, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.QOP = append(c.QOP, o)
			}
		}
	}
	if _, ok := params["realm"]; !ok || c.Nonce == "" {
		return Challenge{}, fmt.Errorf("%w: challenge without realm or nonce", ErrMalformed)
	}
	return c, nil
}

// Supported reports whether Respond can answer c.
func (c Challenge) Supported() bool {
	if _, ok := newHash(c.Algorithm); !ok {
		return false
	}
	return len(c.QOP) == 0 || c.hasQOP("auth")
}

func (c Challenge) hasQOP(q string) bool {
	for _, o := range c.QOP {
		if strings.EqualFold(o, q) {
			return true
		}
	}
	return false
}

// Pick parses every challenge header value and returns the strongest one
// we support. Malformed values are skipped; with none usable the error
// wraps ErrUnsupported (or ErrMalformed when nothing parsed).
func Pick(values []string) (Challenge, error) {
	best, bestRank, parsed := Challenge{}, 0, false
	for _, v := range values {
		c, err := ParseChallenge(v)
		if err != nil {
			continue
		}
		parsed = true
		if !c.Supported() {
			continue
		}
		alg := strings.ToUpper(c.Algorithm)
		if alg == "" {
			alg = "MD5"
		}
		if r := strength[alg]; r > bestRank {
			best, bestRank = c, r
		}
	}
	switch {
	case bestRank > 0:
		return best, nil
	case parsed:
		return Challenge{}, fmt.Errorf("%w: no offered algorithm and qop we implement", ErrUnsupported)
	}
	return Challenge{}, fmt.Errorf("%w: no challenge parses", ErrMalformed)
}

// Respond computes the credentials that answer c for a request.
func Respond(c Challenge, o Options) (Credentials, error) {
	if !c.Supported() {
		return Credentials{}, fmt.Errorf("%w: algorithm %q qop %v", ErrUnsupported, c.Algorithm, c.QOP)
	}
	cr := Credentials{Username: o.Username, Realm: c.Realm, Nonce: c.Nonce, URI: o.URI, Algorithm: c.Algorithm, Opaque: c.Opaque}
	if c.hasQOP("auth") {
		cr.QOP, cr.NC, cr.CNonce = "auth", o.NC, o.CNonce
		if cr.NC == 0 {
			cr.NC = 1
		}
		if cr.CNonce == "" {
			b := make([]byte, 12)
			if _, err := rand.Read(b); err != nil {
				return Credentials{}, fmt.Errorf("digest: cnonce: %w", err)
			}
			cr.CNonce = hex.EncodeToString(b)
		}
	}
	cr.Response = cr.compute(o.Method, o.Password)
	return cr, nil
}

// compute returns the request-digest of RFC 3261 section 22.4 / RFC 7616
// section 3.4.1 for these credentials.
func (cr Credentials) compute(method, password string) string {
	mk, _ := newHash(cr.Algorithm)
	h := func(s string) string {
		x := mk()
		x.Write([]byte(s))
		return hex.EncodeToString(x.Sum(nil))
	}
	ha1 := h(cr.Username + ":" + cr.Realm + ":" + password)
	if strings.HasSuffix(strings.ToUpper(cr.Algorithm), "-SESS") {
		ha1 = h(ha1 + ":" + cr.Nonce + ":" + cr.CNonce)
	}
	ha2 := h(method + ":" + cr.URI)
	if cr.QOP == "" {
		return h(ha1 + ":" + cr.Nonce + ":" + ha2)
	}
	return h(ha1 + ":" + cr.Nonce + ":" + cr.nc() + ":" + cr.CNonce + ":" + cr.QOP + ":" + ha2)
}

func (cr Credentials) nc() string {
	s := strconv.FormatUint(uint64(cr.NC), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

// String returns the header value: Digest username="...", ...
func (cr Credentials) String() string {
	var b strings.Builder
	b.WriteString("Digest ")
	q := func(k, v string) {
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v))
		b.WriteString(`", `)
	}
	q("username", cr.Username)
	q("realm", cr.Realm)
	q("nonce", cr.Nonce)
	q("uri", cr.URI)
	q("response", cr.Response)
	if cr.Algorithm != "" {
		b.WriteString("algorithm=" + cr.Algorithm + ", ")
	}
	if cr.QOP != "" {
		q("cnonce", cr.CNonce)
		b.WriteString("qop=" + cr.QOP + ", nc=" + cr.nc() + ", ")
	}
	if cr.Opaque != "" {
		q("opaque", cr.Opaque)
	}
	return strings.TrimSuffix(b.String(), ", ")
}

// ParseCredentials reads an Authorization header value.
func ParseCredentials(v string) (Credentials, error) {
	p, err := parseHeader(v)
	if err != nil {
		return Credentials{}, err
	}
	cr := Credentials{Username: p["username"], Realm: p["realm"], Nonce: p["nonce"], URI: p["uri"], Response: p["response"],
		Algorithm: p["algorithm"], CNonce: p["cnonce"], QOP: p["qop"], Opaque: p["opaque"]}
	if cr.Username == "" || cr.Nonce == "" || cr.Response == "" {
		return Credentials{}, fmt.Errorf("%w: credentials without username, nonce or response", ErrMalformed)
	}
	if cr.QOP != "" {
		n, err := strconv.ParseUint(p["nc"], 16, 32)
		if err != nil {
			return Credentials{}, fmt.Errorf("%w: nonce count %q", ErrMalformed, p["nc"])
		}
		cr.NC = uint32(n)
	}
	return cr, nil
}

// Verify reports whether cr's response is right for method and password.
// The caller checks that the nonce is one it issued and still fresh.
func (cr Credentials) Verify(method, password string) bool {
	if _, ok := newHash(cr.Algorithm); !ok || (cr.QOP != "" && !strings.EqualFold(cr.QOP, "auth")) {
		return false
	}
	want := cr.compute(method, password)
	return subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(cr.Response))) == 1
}

// parseHeader splits `Digest k=v, k="quoted, \"x\"", ...` into a map
// with lowercase keys.
func parseHeader(v string) (map[string]string, error) {
	v = strings.TrimSpace(v)
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Digest") {
		return nil, fmt.Errorf("%w: not a Digest header", ErrMalformed)
	}
	out := map[string]string{}
	s := rest
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return out, nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("%w: parameter without value", ErrMalformed)
		}
		key := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i, closed := 1, false
			for ; i < len(s); i++ {
				switch c := s[i]; c {
				case '\\':
					if i+1 < len(s) {
						i++
						b.WriteByte(s[i])
					}
				case '"':
					closed = true
				default:
					b.WriteByte(c)
				}
				if closed {
					break
				}
			}
			if !closed {
				return nil, fmt.Errorf("%w: unterminated quoted string", ErrMalformed)
			}
			val, s = b.String(), s[i+1:]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			val, s = strings.TrimSpace(s[:end]), s[end:]
		}
		if _, dup := out[key]; !dup {
			out[key] = val
		}
	}
}
