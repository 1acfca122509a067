package sipua_test

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
	"github.com/voiced/voiced/cmd/voicebench/internal/sipua"
)

func freePort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// sippEcho starts sipp's built-in UAS with RTP echo and returns its SIP
// address. Without sipp the test skips, or fails under CI=true.
func sippEcho(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("sipp")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sipp not installed (apt-get install sip-tester)")
		}
		t.Skip("sipp not installed (apt-get install sip-tester)")
	}
	port, mport := freePort(t), freePort(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, "-sn", "uas", "-rtp_echo", "-i", "127.0.0.1", "-p", strconv.Itoa(port),
		"-mi", "127.0.0.1", "-mp", strconv.Itoa(mport), "-nostdin", "-timeout", "60s")
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("sipp output:\n%s", out.String())
		}
	})
	return "127.0.0.1:" + strconv.Itoa(port)
}

func TestCallsAgainstSippEcho(t *testing.T) {
	server := sippEcho(t)
	ua, err := sipua.New(sipua.Config{Server: server, To: "echo"}, nil)
	require.NoError(t, err)
	defer ua.Close()

	pcm, rate, err := audio.DefaultPrompt()
	require.NoError(t, err)
	src, err := audio.NewSource(pcm, rate, 300*time.Millisecond)
	require.NoError(t, err)
	g, err := load.New(load.Config{Codec: sdp.PCMU, Source: src, Topology: load.Echo, Rate: 50}, ua, nil)
	require.NoError(t, err)

	// sipp may need a moment to bind; the first attempts retry on timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	failed, err := g.Scale(ctx, 8)
	require.NoError(t, err)
	require.Zero(t, failed)

	w, err := g.Measure(ctx, 1500*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, 8, w.Calls)
	require.Greater(t, w.Received, uint64(400))
	require.Zero(t, w.Lost)

	res := g.Stop()
	require.Len(t, res, 8)
	for _, r := range res {
		require.True(t, r.OK(), "call %d: %s", r.Index, r.Err)
		require.Empty(t, r.HangupErr, "BYE answered")
		require.Positive(t, r.SetupMs)
		require.InDelta(t, float64(r.Sent), float64(r.Received), 3, "sipp echoes every packet")
		require.NotEmpty(t, r.Lags, "the prompt came back")
		require.Less(t, r.OneWayMs, 40.0)
		require.Greater(t, r.MOS, 4.3)
	}
}

func TestRefusedCall(t *testing.T) {
	// Nothing listens: the INVITE times out within the setup bound.
	port := freePort(t)
	ua, err := sipua.New(sipua.Config{Server: "127.0.0.1:" + strconv.Itoa(port), To: "nobody"}, nil)
	require.NoError(t, err)
	defer ua.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = ua.Dial(ctx, load.Offer{Codec: sdp.PCMU, SendFrom: netip.MustParseAddrPort("127.0.0.1:40000")})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second, "the setup timeout is honoured, not SIP's Timer B")

	_, err = sipua.New(sipua.Config{Server: "no-port", To: "x"}, nil)
	require.ErrorIs(t, err, sipua.ErrConfig)
}
