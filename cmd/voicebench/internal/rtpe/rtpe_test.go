package rtpe_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/ng"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpe"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

func daemon(t *testing.T) *rtpe.Daemon {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	ngAddr := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	d, err := rtpe.Start(context.Background(), rtpe.DaemonConfig{NG: ngAddr, PortMin: 42000, PortMax: 42999, CPU: -1}, nil)
	if errors.Is(err, rtpe.ErrNotInstalled) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rtpengine log:\n%s", d.Log())
		}
		d.Close()
	})
	return d
}

func source(t *testing.T) *audio.Source {
	pcm, rate, err := audio.DefaultPrompt()
	require.NoError(t, err)
	s, err := audio.NewSource(pcm, rate, 300*time.Millisecond)
	require.NoError(t, err)
	return s
}

func TestRelayAndTranscode(t *testing.T) {
	d := daemon(t)
	require.Positive(t, d.PID())
	opus := sdp.Opus
	for _, tc := range []struct {
		name      string
		transcode *sdp.Codec
		recv      string
	}{
		{"S1 PCMU relay", nil, "PCMU"},
		{"S2 PCMU to Opus", &opus, "opus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := &rtpe.Target{Client: d.Client(), Transcode: tc.transcode, RunID: tc.recv}
			g, err := load.New(load.Config{Codec: sdp.PCMU, Source: source(t), Topology: load.Relay, Rate: 100, Probe: 4,
				TargetPIDs: []int{d.PID()}}, target, nil)
			require.NoError(t, err)
			failed, err := g.Scale(context.Background(), 6)
			require.NoError(t, err)
			require.Zero(t, failed)
			w, err := g.Measure(context.Background(), 1500*time.Millisecond)
			require.NoError(t, err)
			require.Equal(t, 6, w.Calls)
			require.Greater(t, w.Received, uint64(300), "rtpengine forwards to the B leg")
			require.Zero(t, w.Lost)
			require.Greater(t, w.TargetCPUPct, 0.0, "rtpengine's CPU is accounted")
			res := g.Stop()
			for _, r := range res {
				require.True(t, r.OK(), r.Err)
				require.Empty(t, r.HangupErr, "ng delete accepted")
				require.Equal(t, "PCMU", r.Codec)
				require.Greater(t, r.Received, uint64(50))
				require.LessOrEqual(t, r.Received, r.Sent)
				if r.Probed {
					require.NotEmpty(t, r.Lags, "call %d: the prompt reached B", r.Index)
					require.Less(t, r.OneWayMs, 60.0)
					require.GreaterOrEqual(t, r.OneWayMs, 0.0)
				}
			}
		})
	}
}

func TestNGErrors(t *testing.T) {
	d := daemon(t)
	_, err := d.Client().Do(context.Background(), map[string]any{"command": "query", "call-id": "nonexistent"})
	var ngErr *ng.Error
	require.ErrorAs(t, err, &ngErr)
	require.Equal(t, "Unknown call-id", ngErr.Reason)
	target := &rtpe.Target{Client: d.Client(), RunID: "bad"}
	// A codec rtpengine does not know is not offered to B, and the call
	// is refused (and deleted).
	bogus := sdp.Codec{Name: "NOPE", PT: 99, Clock: 8000, Channels: 1}
	_, _, err = target.Dial(context.Background(), load.Offer{Index: 1, Codec: sdp.PCMU, SendFrom: netip.MustParseAddrPort("127.0.0.1:40000"),
		RecvOn: netip.MustParseAddrPort("127.0.0.1:40002")})
	require.NoError(t, err, "a plain offer/answer works")
	target.Transcode = &bogus
	_, _, err = target.Dial(context.Background(), load.Offer{Index: 2, Codec: sdp.PCMU, SendFrom: netip.MustParseAddrPort("127.0.0.1:40000"),
		RecvOn: netip.MustParseAddrPort("127.0.0.1:40002")})
	require.Error(t, err)
}
