package webrtc

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/mediatest"
)

// startCoturn runs Debian's coturn on a free loopback port with one
// long-term credential, relaying to loopback peers.
func startCoturn(t *testing.T) ICEServer {
	t.Helper()
	s := runCoturn(t, "--user=voiced:secret", "--lt-cred-mech")
	s.Username, s.Credential = "voiced", "secret"
	return s
}

// runCoturn runs coturn on a free loopback port with the authentication
// options auth, relaying to loopback peers, and returns its URL.
func runCoturn(t *testing.T, auth ...string) ICEServer {
	return ICEServer{URLs: []string{mediatest.Coturn(t, 49160, 49400, auth...)}}
}

func TestCallThroughTURN(t *testing.T) {
	turn := startCoturn(t)
	defer leakCheck(t)()
	cfg := testConfig()
	cfg.ICEServers = []ICEServer{turn}
	cfg.RelayOnly = true
	// pion holds relay pairs back for 2 s before it accepts them, so the
	// short test timers would fail the checks first.
	cfg.DisconnectedTimeout, cfg.FailedTimeout = 0, 0
	s := newTestServer(t, cfg)
	c, sess, ran := call(t, s, clientOptions{}, SessionOptions{})
	answer := sess.pc.LocalDescription().SDP
	require.Contains(t, answer, "typ relay")
	require.NotContains(t, answer, "typ host", "relay-only announces no host address")
	c.waitConnected(10 * time.Second)
	require.Eventually(t, func() bool { return c.voicedIn.Load() >= 10 }, 10*time.Second, 20*time.Millisecond,
		"echo through the relay: %d packets, %d voiced", c.packetsIn.Load(), c.voicedIn.Load())
	require.GreaterOrEqual(t, sess.Stats().FramesVoiced, uint64(10))
	t.Logf("setup through TURN: %v", sess.Stats().SetupTime)
	c.close()
	reason, _ := waitEnd(t, sess, 5*time.Second)
	require.Equal(t, "caller_hangup", reason)
	require.NoError(t, <-ran)
	require.NoError(t, s.Close())
}

// TestTURNRESTCredentials checks the time-limited credentials against a
// real coturn started with use-auth-secret: the node relays with its own
// and a browser stand-in with the ones BrowserICEServers hands out, so
// the call connects relay to relay; credentials made with another secret,
// or expired ones, get no relay from coturn.
func TestTURNRESTCredentials(t *testing.T) {
	const secret = "coturn-shared-secret"
	turn := runCoturn(t, "--use-auth-secret", "--static-auth-secret="+secret)
	defer leakCheck(t)()

	// The format, against a value computed independently (Python's hmac):
	// base64(HMAC-SHA1(secret, "<expiry>:<id>")).
	user, pass := TURNCredentials("north", "pk_live_1234", time.Unix(1700000000, 0))
	require.Equal(t, "1700000000:pk_live_1234", user)
	require.Equal(t, "gJLBFRPaIebS3XgQFRL8ctDabtk=", pass)

	cfg := testConfig()
	cfg.ICEServers = []ICEServer{turn}
	cfg.TURNSecret = secret
	cfg.TURNCredentialTTL = 10 * time.Minute
	cfg.RelayOnly = true
	cfg.DisconnectedTimeout, cfg.FailedTimeout = 0, 0 // relay pairs wait 2 s in pion
	s := newTestServer(t, cfg)
	servers, exp := s.BrowserICEServers("pk_live_1234")
	require.Len(t, servers, 1)
	require.Equal(t, turn.URLs, servers[0].URLs)
	require.Regexp(t, `^[0-9]+:pk_live_1234$`, servers[0].Username)
	require.WithinDuration(t, time.Now().Add(10*time.Minute), exp, 2*time.Second)
	require.Equal(t, strconv.FormatInt(exp.Unix(), 10)+":pk_live_1234", servers[0].Username)

	// Refused credentials: no relay candidate in the offer.
	for name, bad := range map[string]ICEServer{
		"wrong secret": func() ICEServer {
			u, p := TURNCredentials("not-the-secret", "pk_live_1234", time.Now().Add(time.Hour))
			return ICEServer{URLs: turn.URLs, Username: u, Credential: p}
		}(),
		"expired": func() ICEServer {
			u, p := TURNCredentials(secret, "pk_live_1234", time.Now().Add(-time.Minute))
			return ICEServer{URLs: turn.URLs, Username: u, Credential: p}
		}(),
	} {
		c, offer := newTestClient(t, clientOptions{relayOnly: true, turn: &bad})
		require.NotContains(t, offer, "typ relay", name)
		c.close()
	}

	c, sess, ran := call(t, s, clientOptions{relayOnly: true, turn: &servers[0]}, SessionOptions{CallID: 7})
	require.Contains(t, sess.pc.LocalDescription().SDP, "typ relay", "the node relays with its own credentials")
	c.waitConnected(10 * time.Second)
	require.Eventually(t, func() bool { return c.voicedIn.Load() >= 10 }, 10*time.Second, 20*time.Millisecond,
		"echo through the relays: %d packets, %d voiced", c.packetsIn.Load(), c.voicedIn.Load())
	c.close()
	reason, _ := waitEnd(t, sess, 5*time.Second)
	require.Equal(t, "caller_hangup", reason)
	require.NoError(t, <-ran)
	require.NoError(t, s.Close())
}
