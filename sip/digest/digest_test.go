package digest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVectors checks the worked examples of RFC 2617 section 3.5 and
// RFC 7616 section 3.9.1 (MD5 and SHA-256 with qop=auth).
func TestVectors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		challenge string
		opt       Options
		want      string
	}{
		{
			"rfc2617 md5",
			`Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"`,
			Options{Method: "GET", URI: "/dir/index.html", Username: "Mufasa", Password: "Circle Of Life", CNonce: "0a4f113b", NC: 1},
			"6629fae49393a05397450978507c4ef1",
		},
		{
			"rfc7616 md5",
			`Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=MD5, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`,
			Options{Method: "GET", URI: "/dir/index.html", Username: "Mufasa", Password: "Circle of Life", CNonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", NC: 1},
			"8ca523f5e9506fed4657c9700eebdbec",
		},
		{
			"rfc7616 sha-256",
			`Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`,
			Options{Method: "GET", URI: "/dir/index.html", Username: "Mufasa", Password: "Circle of Life", CNonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", NC: 1},
			"753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseChallenge(tc.challenge)
			require.NoError(t, err)
			cr, err := Respond(c, tc.opt)
			require.NoError(t, err)
			require.Equal(t, tc.want, cr.Response)
			// The header parses back and verifies on the server side.
			back, err := ParseCredentials(cr.String())
			require.NoError(t, err)
			require.Equal(t, cr, back)
			require.True(t, back.Verify(tc.opt.Method, tc.opt.Password))
			require.False(t, back.Verify(tc.opt.Method, "wrong"))
			require.False(t, back.Verify("POST", tc.opt.Password))
		})
	}
}

func TestNoQOP(t *testing.T) {
	// RFC 2069 style: response = H(HA1:nonce:HA2); no cnonce or nc sent.
	c, err := ParseChallenge(`Digest realm="asterisk",nonce="1cd2e0b4"`)
	require.NoError(t, err)
	cr, err := Respond(c, Options{Method: "INVITE", URI: "sip:+15551234567@pbx.example.com", Username: "100", Password: "secret"})
	require.NoError(t, err)
	require.Empty(t, cr.QOP)
	require.NotContains(t, cr.String(), "cnonce")
	require.NotContains(t, cr.String(), "nc=")
	require.True(t, cr.Verify("INVITE", "secret"))
	require.Len(t, cr.Response, 32)
}

func TestSessAlgorithm(t *testing.T) {
	c, err := ParseChallenge(`Digest realm="r", nonce="n", algorithm=SHA-256-sess, qop="auth"`)
	require.NoError(t, err)
	cr, err := Respond(c, Options{Method: "REGISTER", URI: "sip:r", Username: "u", Password: "p", CNonce: "c"})
	require.NoError(t, err)
	plain, err := Respond(Challenge{Realm: "r", Nonce: "n", Algorithm: "SHA-256", QOP: []string{"auth"}},
		Options{Method: "REGISTER", URI: "sip:r", Username: "u", Password: "p", CNonce: "c"})
	require.NoError(t, err)
	require.NotEqual(t, plain.Response, cr.Response, "-sess hashes the nonces into HA1")
	require.True(t, cr.Verify("REGISTER", "p"))
}

func TestPick(t *testing.T) {
	md5 := `Digest realm="sip.example.com", nonce="a", algorithm=MD5, qop="auth"`
	sha := `Digest realm="sip.example.com", nonce="b", algorithm=SHA-256, qop="auth"`
	c, err := Pick([]string{md5, sha})
	require.NoError(t, err)
	require.Equal(t, "SHA-256", c.Algorithm)
	c, err = Pick([]string{"garbage", md5})
	require.NoError(t, err)
	require.Equal(t, "MD5", c.Algorithm)
	_, err = Pick([]string{`Digest realm="r", nonce="n", algorithm=SHA-1`})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = Pick([]string{`Digest realm="r", nonce="n", qop="auth-int"`})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = Pick([]string{"Basic realm=x"})
	require.ErrorIs(t, err, ErrMalformed)
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"", "Digest", "Basic realm=\"x\"", `Digest realm="x`, `Digest realm="r"`, `Digest nonce="n"`, `Digest =x`,
	} {
		_, err := ParseChallenge(in)
		require.ErrorIs(t, err, ErrMalformed, in)
	}
	_, err := ParseCredentials(`Digest username="u", nonce="n", response="r", qop=auth, nc=zz`)
	require.ErrorIs(t, err, ErrMalformed)
	_, err = ParseCredentials(`Digest username="u", nonce="n"`)
	require.ErrorIs(t, err, ErrMalformed)
}

func TestQuoting(t *testing.T) {
	c, err := ParseChallenge(`Digest realm="a \"quoted\", realm", nonce="n,1", stale=TRUE`)
	require.NoError(t, err)
	require.Equal(t, `a "quoted", realm`, c.Realm)
	require.Equal(t, "n,1", c.Nonce)
	require.True(t, c.Stale)
	cr, err := Respond(c, Options{Method: "INVITE", URI: "sip:x", Username: `we"ird`, Password: "p"})
	require.NoError(t, err)
	back, err := ParseCredentials(cr.String())
	require.NoError(t, err)
	require.Equal(t, cr, back)
	require.True(t, strings.HasPrefix(cr.String(), `Digest username="we\"ird"`))
}

func FuzzParseChallenge(f *testing.F) {
	f.Add(`Digest realm="r", nonce="n", algorithm=SHA-256, qop="auth"`)
	f.Add(`Digest realm="a \"q\"", nonce=x,stale=true`)
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseChallenge(in)
		if err != nil || !c.Supported() {
			return
		}
		cr, err := Respond(c, Options{Method: "INVITE", URI: "sip:x", Username: "u", Password: "p", CNonce: "c"})
		require.NoError(t, err)
		back, err := ParseCredentials(cr.String())
		require.NoError(t, err)
		require.True(t, back.Verify("INVITE", "p"))
	})
}
