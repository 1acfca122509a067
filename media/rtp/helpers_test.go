package rtp

import (
	"context"
	"log/slog"
	"math"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media/pace"
)

var localhost = netip.MustParseAddr("127.0.0.1")

// quiet drops the sessions' rare log lines in tests.
var quiet = slog.New(slog.DiscardHandler)

var (
	codecPCMU = Codec{PT: 0, Name: NamePCMU, ClockRate: 8000, Channels: 1}
	codecPCMA = Codec{PT: 8, Name: NamePCMA, ClockRate: 8000, Channels: 1}
	codecOpus = Codec{PT: 111, Name: NameOpus, ClockRate: 48000, Channels: 2}
	dtmf8k    = Codec{PT: 101, Name: NameDTMF, ClockRate: 8000, Channels: 1}
	dtmf48k   = Codec{PT: 101, Name: NameDTMF, ClockRate: 48000, Channels: 1}
)

// newPacer is a node's pacer, with the send batch (NewPacerWorker) where
// the system has io_uring; newPacerRaw has none.
func newPacer(t testing.TB) *pace.Pacer {
	t.Helper()
	p, err := pace.New(pace.Config{NewWorker: NewPacerWorker}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func newPorts(t testing.TB) *Ports {
	t.Helper()
	p, err := NewPorts(23000, 28799)
	require.NoError(t, err)
	return p
}

func newSession(t testing.TB, cfg Config, pacer *pace.Pacer, ports *Ports) *Session {
	t.Helper()
	if !cfg.Local.IsValid() {
		cfg.Local = localhost
	}
	s, err := NewSession(cfg, quiet, pacer, ports)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// params returns what s would negotiate to talk to peer with codec.
func params(peer *Session, c Codec, dtmf Codec) Params {
	dpt := uint8(0)
	if dtmf.Name != "" {
		dpt = dtmf.PT
	}
	return Params{
		Remote:     netip.AddrPortFrom(localhost, peer.LocalAddr().Port()),
		Codec:      c,
		RecvPT:     c.PT,
		DTMF:       dtmf,
		RecvDTMFPT: dpt,
		Send:       true,
		Receive:    true,
	}
}

// pair returns two sessions talking to each other.
func pair(t testing.TB, cfg Config, c, dtmf Codec) (a, b *Session) {
	t.Helper()
	pacer, ports := newPacer(t), newPorts(t)
	a = newSession(t, cfg, pacer, ports)
	b = newSession(t, cfg, pacer, ports)
	require.NoError(t, a.Update(params(b, c, dtmf)))
	require.NoError(t, b.Update(params(a, c, dtmf)))
	return a, b
}

// tone is a Source playing a sine at the engine rate.
type tone struct {
	mu    sync.Mutex
	hz    float64
	amp   float64
	n     int
	rate  int
	quiet bool
}

func (g *tone) ReadFrame(dst []int16) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.quiet {
		return false
	}
	for i := range dst {
		dst[i] = int16(g.amp * math.Sin(2*math.Pi*g.hz*float64(g.n)/float64(g.rate)))
		g.n++
	}
	return true
}

// collect reads frames from s for d and returns them concatenated.
func collect(t testing.TB, s *Session, d time.Duration) []int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Second)
	defer cancel()
	var out []int16
	buf := make([]int16, 320)
	for range int(d / (20 * time.Millisecond)) {
		n, err := s.ReadFrame(ctx, buf)
		require.NoError(t, err)
		out = append(out, buf[:n]...)
	}
	return out
}

func rms(a []int16) float64 {
	var e float64
	for _, v := range a {
		e += float64(v) * float64(v)
	}
	return math.Sqrt(e / float64(max(len(a), 1)))
}

// goertzel returns the power of frequency hz in a (at rate) relative to
// the total power: near 1 for a clean tone at hz.
func goertzel(a []int16, hz float64, rate int) float64 {
	w := 2 * math.Pi * hz / float64(rate)
	c := 2 * math.Cos(w)
	var s1, s2, total float64
	for _, v := range a {
		x := float64(v)
		s0 := x + c*s1 - s2
		s2, s1 = s1, s0
		total += x * x
	}
	p := s1*s1 + s2*s2 - c*s1*s2
	if total == 0 {
		return 0
	}
	return 2 * p / (float64(len(a)) * total)
}

// requireNoLeak waits up to two seconds for the goroutine count to fall to
// before.
func requireNoLeak(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines leaked")
}

func newPacerRaw(t testing.TB) *pace.Pacer {
	t.Helper()
	p, err := pace.New(pace.Config{}, nil)
	require.NoError(t, err)
	return p
}

// toneFrames returns the share of 20 ms frames of a (16 kHz) that are a
// clean tone at hz (a multiple of 50 Hz, so a frame holds whole cycles):
// robust to the odd concealed frame on a loaded machine.
func toneFrames(a []int16, hz float64) float64 {
	n, ok := 0, 0
	for i := 0; i+320 <= len(a); i += 320 {
		n++
		if goertzel(a[i:i+320], hz, 16000) > 0.9 {
			ok++
		}
	}
	return float64(ok) / float64(max(n, 1))
}

// slack is the configuration of the tests that judge audio quality in real
// time: a jitter buffer that starts at 60 ms (and may grow to 200) so a
// machine busy with other work, whose pacer ticks and goroutines run late,
// does not turn scheduling noise into concealed frames.
var slack = Config{Jitter: jitterCfg(60, 200)}
