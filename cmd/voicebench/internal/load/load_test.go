package load_test

import (
	"context"
	"errors"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/echo"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

var lo = netip.MustParseAddr("127.0.0.1")

func source(t *testing.T) *audio.Source {
	t.Helper()
	pcm, rate, err := audio.DefaultPrompt()
	require.NoError(t, err)
	s, err := audio.NewSource(pcm, rate, 500*time.Millisecond)
	require.NoError(t, err)
	return s
}

func echoServer(t *testing.T, n int) *echo.Server {
	t.Helper()
	s, err := echo.Listen(lo, 0, n)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// settle waits for goroutines to return to at most n.
func settle(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), n, "goroutines leaked")
}

func TestEchoLoad(t *testing.T) {
	for _, codec := range []sdp.Codec{sdp.PCMU, sdp.Opus} {
		t.Run(codec.Name, func(t *testing.T) {
			srv := echoServer(t, 8)
			base := runtime.NumGoroutine()
			g, err := load.New(load.Config{Codec: codec, Source: source(t), Topology: load.Echo, Rate: 200, Lanes: 2}, echo.Target{Addrs: srv.Addrs()}, nil)
			require.NoError(t, err)
			failed, err := g.Scale(context.Background(), 16)
			require.NoError(t, err)
			require.Zero(t, failed)
			require.Equal(t, int64(16), g.Progress().Active)

			w, err := g.Measure(context.Background(), 1500*time.Millisecond)
			require.NoError(t, err)
			require.Equal(t, 16, w.Calls)
			// 16 calls x 50 packets/s x 1.5 s = 1200; a loaded machine
			// makes the pacer skip a few ticks, never add any.
			require.LessOrEqual(t, w.Sent, uint64(1200+32))
			require.GreaterOrEqual(t, w.Sent, uint64(800))
			require.InDelta(t, float64(w.Sent), float64(w.Received), 32) // in flight at the edges
			require.Zero(t, w.Lost)
			// Loopback echo jitter is sub-millisecond on an idle machine;
			// the bound leaves room for a shared CI host, while a wrong
			// clock rate (6x at Opus's 48 kHz) would blow through it.
			require.Less(t, w.JitterP99Ms, 60.0)
			require.Greater(t, w.GeneratorCPUPct, 0.0)

			res := g.Stop()
			require.Len(t, res, 16)
			for _, r := range res {
				require.True(t, r.OK(), r.Err)
				require.Equal(t, "voicebench", r.EndedBy)
				require.Greater(t, r.Sent, uint64(50), "1.5 s at 50 packets/s, less what a loaded machine delays")
				require.InDelta(t, float64(r.Sent), float64(r.Received), 2)
				require.Zero(t, r.Lost)
				require.Positive(t, r.MOS)
				require.Greater(t, r.MOS, 4.3)
			}
			// Probed calls recovered the onset: a loopback echo is well
			// under 10 ms one way.
			probed := 0
			for _, r := range res {
				if !r.Probed {
					continue
				}
				probed++
				require.NotEmpty(t, r.Lags, "call %d", r.Index)
				require.GreaterOrEqual(t, r.OneWayMs, 0.0)
				require.Less(t, r.OneWayMs, 40.0)
				require.Greater(t, r.FirstAudioMs, 20.0) // the prompt's own lead-in
			}
			require.Equal(t, 16, probed)
			settle(t, base)
		})
	}
}

// flaky fails odd calls and hangs up even ones after a while.
type flaky struct {
	addrs  []netip.AddrPort
	hangAt time.Duration
	mu     sync.Mutex
	hung   int
}

type endedSession struct{ ended chan struct{} }

func (s endedSession) Hangup(context.Context) error { return nil }
func (s endedSession) Ended() <-chan struct{}       { return s.ended }

func (f *flaky) Dial(ctx context.Context, o load.Offer) (load.Session, load.Answer, error) {
	if o.Index%2 == 1 {
		return nil, load.Answer{}, errors.New("486 busy here")
	}
	s := endedSession{ended: make(chan struct{})}
	if f.hangAt > 0 {
		time.AfterFunc(f.hangAt, func() { close(s.ended) })
	}
	return s, load.Answer{SendTo: f.addrs[0], Codec: o.Codec}, nil
}

func TestFailuresAndRemoteHangup(t *testing.T) {
	srv := echoServer(t, 1)
	g, err := load.New(load.Config{Codec: sdp.PCMA, Source: source(t), Rate: 500}, &flaky{addrs: srv.Addrs(), hangAt: 300 * time.Millisecond}, nil)
	require.NoError(t, err)
	failed, err := g.Scale(context.Background(), 6)
	require.NoError(t, err)
	require.Equal(t, 3, failed)
	time.Sleep(600 * time.Millisecond)
	require.Zero(t, g.Progress().Active)
	res := g.Stop()
	require.Len(t, res, 6)
	for _, r := range res {
		if r.Index%2 == 1 {
			require.Equal(t, "486 busy here", r.Err)
			continue
		}
		require.ErrorContains(t, errors.New(r.Err), "ended the call")
		require.Equal(t, "target", r.EndedBy)
		require.Greater(t, r.Received, uint64(5))
	}
}

func TestMaintainReplacesEndedCalls(t *testing.T) {
	srv := echoServer(t, 4)
	g, err := load.New(load.Config{Codec: sdp.PCMU, Source: source(t), Rate: 100, Duration: 250 * time.Millisecond}, echo.Target{Addrs: srv.Addrs()}, nil)
	require.NoError(t, err)
	g.Maintain(true)
	_, err = g.Scale(context.Background(), 4)
	require.NoError(t, err)
	time.Sleep(900 * time.Millisecond)
	p := g.Progress()
	require.GreaterOrEqual(t, p.Started, int64(10), "calls of 250 ms replaced for 900 ms")
	require.LessOrEqual(t, p.Active, int64(4))
	res := g.Stop()
	for _, r := range res {
		require.True(t, r.OK(), r.Err)
		require.Less(t, r.DurationMs, 400.0)
	}
	_, err = g.Scale(context.Background(), 1)
	require.ErrorIs(t, err, load.ErrStopped)
}
