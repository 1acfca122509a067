package mediatest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Coturn runs Debian's coturn (turnserver) on a free loopback UDP port
// with the authentication options auth, relaying to loopback peers from
// relay ports minPort to maxPort (give each test package its own range),
// and returns its turn: URL. Without coturn the test fails under CI=true
// and is skipped otherwise. coturn stops at the test's cleanup.
func Coturn(t testing.TB, minPort, maxPort int, auth ...string) string {
	t.Helper()
	bin, err := exec.LookPath("turnserver")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("coturn (turnserver) is required under CI=true")
		}
		t.Skip("coturn not installed")
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	dir := t.TempDir()
	args := append([]string{"-n", "--listening-ip=127.0.0.1", fmt.Sprintf("--listening-port=%d", port),
		"--relay-ip=127.0.0.1", "--realm=voiced.test", "--allow-loopback-peers",
		"--no-cli", "--no-tls", "--no-dtls", "--no-tcp", fmt.Sprintf("--min-port=%d", minPort), fmt.Sprintf("--max-port=%d", maxPort),
		"--log-file=stdout", "--userdb=" + dir + "/turndb", "--pidfile=" + dir + "/turn.pid"}, auth...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	// Ready when coturn holds the port.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("coturn did not start")
		}
	}
	return fmt.Sprintf("turn:127.0.0.1:%d?transport=udp", port)
}
