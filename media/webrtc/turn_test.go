package webrtc

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startCoturn runs Debian's coturn on a free loopback port with one
// long-term credential, relaying to loopback peers.
func startCoturn(t *testing.T) ICEServer {
	t.Helper()
	bin, err := exec.LookPath("turnserver")
	ciRequires(t, err == nil, "coturn (turnserver)")
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-n", "--listening-ip=127.0.0.1", fmt.Sprintf("--listening-port=%d", port),
		"--relay-ip=127.0.0.1", "--user=voiced:secret", "--realm=voiced.test", "--lt-cred-mech", "--allow-loopback-peers",
		"--no-cli", "--no-tls", "--no-dtls", "--no-tcp", "--min-port=49160", "--max-port=49400", "--log-file=stdout",
		"--userdb="+t.TempDir()+"/turndb", "--pidfile="+t.TempDir()+"/turn.pid")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	// Ready when the port is taken.
	require.Eventually(t, func() bool {
		c, err := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return true
		}
		c.Close()
		return false
	}, 5*time.Second, 20*time.Millisecond, "coturn did not start")
	return ICEServer{URLs: []string{fmt.Sprintf("turn:127.0.0.1:%d?transport=udp", port)}, Username: "voiced", Credential: "secret"}
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
