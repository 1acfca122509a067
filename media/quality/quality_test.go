package quality

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMOSKnownPoints checks the E-model against hand-computed G.107 values.
func TestMOSKnownPoints(t *testing.T) {
	clean := EModel{Codec: PCMU}
	// Ta = 20 ms: Id = 0.48, R = 92.72.
	require.InDelta(t, 92.72, clean.R(), 0.005)
	require.InDelta(t, 4.40, clean.MOS(), 0.005)

	// 5% random loss: Ie,eff = 95*5/(5+25.1) = 15.78, R = 76.94.
	lossy := EModel{Codec: PCMU, LossPercent: 5}
	require.InDelta(t, 76.94, lossy.R(), 0.01)
	require.InDelta(t, 3.90, lossy.MOS(), 0.01)
	require.Less(t, lossy.MOS(), clean.MOS())

	// The same loss in bursts hurts more.
	bursty := EModel{Codec: PCMU, LossPercent: 5, BurstRatio: 2}
	require.Less(t, bursty.MOS(), lossy.MOS())

	// Delay: 150 ms one way (+20 codec) costs 4.08; past 177.3 the slope
	// steepens.
	require.InDelta(t, 93.2-0.024*170, EModel{Codec: PCMU, Delay: 150 * time.Millisecond}.R(), 1e-9)
	long := EModel{Codec: PCMU, Delay: 380 * time.Millisecond}
	require.InDelta(t, 93.2-0.024*400-0.11*(400-177.3), long.R(), 1e-9)
	require.Less(t, long.MOS(), 3.7)

	// Limits.
	require.Equal(t, 1.0, MOSFromR(-5))
	require.Equal(t, 4.5, MOSFromR(120))
	require.Equal(t, 1.0, EModel{Codec: PCMU, LossPercent: 100, Delay: time.Second}.MOS())
	require.InDelta(t, 1.0, EModel{Codec: PCMU, LossPercent: 400}.MOS(), 0.6, "clamped to 100%")
	// MOS is monotonic in R.
	prev := 0.0
	for r := 0.0; r <= 100; r += 0.5 {
		m := MOSFromR(r)
		require.GreaterOrEqual(t, m, prev)
		prev = m
	}
}

func TestCodecByName(t *testing.T) {
	for _, n := range []string{"PCMU", "pcma", "OPUS"} {
		c, ok := CodecByName(n)
		require.True(t, ok, n)
		require.NotEmpty(t, c.Name)
	}
	c, ok := CodecByName("G729")
	require.False(t, ok)
	require.Equal(t, PCMU, c)
}

func TestBurstRatio(t *testing.T) {
	require.Equal(t, 1.0, BurstRatio(0, 0, 100))
	// 10 single losses in 1000: random-like.
	require.Equal(t, 1.0, BurstRatio(10, 10, 1000))
	// 30 lost in 3 runs of 10 in 1000 packets: 10 * 0.97.
	require.InDelta(t, 9.7, BurstRatio(30, 3, 1000), 1e-9)
}

func TestSnapshot(t *testing.T) {
	var m Metrics
	m.PacketsExpected.Store(1000)
	m.PacketsReceived.Store(950)
	m.PacketsLost.Store(40)
	m.LossBursts.Store(40)
	m.Late.Store(10)
	m.Jitter.Store(int64(3 * time.Millisecond))
	m.RTT.Store(int64(60 * time.Millisecond))
	m.BufferDelay.Store(int64(40 * time.Millisecond))
	m.RemoteLossFraction.Store(64)
	s := m.Snapshot(PCMA)
	require.Equal(t, "PCMA", s.Codec)
	require.InDelta(t, 4.0, s.LossPercent, 1e-9, "the network's loss, as a capture shows it")
	require.Equal(t, 3.0, s.JitterMs)
	require.Equal(t, 25.0, s.RemoteLossPercent)
	// The listener also missed the late packets: the MOS counts both.
	want := EModel{Codec: PCMA, LossPercent: 5, Delay: 70 * time.Millisecond}
	require.InDelta(t, want.MOS(), s.MOS, 1e-9)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(b), `"loss_percent":4`)

	// Late packets alone are no network loss (packets_lost 0 with a
	// loss_percent of 0.1 to 0.9 was reported before issue 30).
	var late Metrics
	late.PacketsExpected.Store(1000)
	late.PacketsReceived.Store(1000)
	late.Late.Store(5)
	require.Zero(t, late.Snapshot(PCMU).LossPercent)
	require.Contains(t, string(b), `"mos":`)

	var empty Metrics
	require.InDelta(t, 4.40, empty.Snapshot(PCMU).MOS, 0.005, "no traffic, no impairment")
}

func TestSetMaxConcurrent(t *testing.T) {
	var m Metrics
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				SetMax(&m.JitterMax, int64(g*1000+i))
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 3999, m.JitterMax.Load())
}

func TestTalk(t *testing.T) {
	var m Metrics
	tk := Talk{Threshold: time.Second, Metrics: &m}
	frame := 20 * time.Millisecond
	feed := func(caller, agent bool, d time.Duration) {
		for range int(d / frame) {
			tk.Observe(caller, agent, frame)
		}
	}
	feed(true, false, time.Second)
	feed(false, false, 800*time.Millisecond) // a pause: not dead air
	feed(false, true, time.Second)
	feed(true, true, 300*time.Millisecond) // barge-in
	feed(false, false, 2500*time.Millisecond)
	feed(true, false, 100*time.Millisecond)
	require.Equal(t, 1, tk.Events())
	require.Equal(t, 2500*time.Millisecond, time.Duration(m.DeadAir.Load()))
	require.Equal(t, 300*time.Millisecond, time.Duration(m.TalkOver.Load()))
}

func TestLatency(t *testing.T) {
	var l Latency
	require.Equal(t, LatencySummary{}, l.Summary())
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l.AgentTurn(at(0)) // a greeting answers nothing
	l.CallerTurn(at(2000))
	l.AgentTurn(at(2700)) // 700
	l.CallerTurn(at(5000))
	l.AgentTurn(at(4800)) // began before the caller stopped: talk-over, not an answer
	l.AgentTurn(at(5400)) // 400
	l.CallerTurn(at(8000))
	l.CallerTurn(at(7000)) // reported late: the answer is to the latest end
	l.AgentTurn(at(9500))  // 1500
	l.AgentTurn(at(9900))  // nothing pending
	// The engine reports an agent turn when it ends, after the caller's
	// next turn (which barged in) was reported: each still gets its answer.
	l.CallerTurn(at(10000))
	l.CallerTurn(at(11000))
	l.AgentTurn(at(10650)) // 650, to the turn that ended at 10000
	l.AgentTurn(at(11550)) // 550
	for i := range 15 {    // 15 more at 600 ms
		base := 20000 + i*3000
		l.CallerTurn(at(base))
		l.AgentTurn(at(base + 600))
	}
	s := l.Summary()
	require.Equal(t, 20, s.Turns)
	require.Equal(t, 600*time.Millisecond, s.P50)
	require.Equal(t, 700*time.Millisecond, s.P95, "19th of 20 sorted: 400, 550, 600 x15, 650, 700, 1500")
	require.Equal(t, 1500*time.Millisecond, s.Max)
}

// Set and SetInt leave the figure at v, whether or not it held v.
func TestSet(t *testing.T) {
	var u atomic.Uint64
	Set(&u, 7)
	Set(&u, 7)
	require.EqualValues(t, 7, u.Load())
	Set(&u, 0)
	require.Zero(t, u.Load())
	var i atomic.Int64
	SetInt(&i, -3)
	SetInt(&i, -3)
	require.EqualValues(t, -3, i.Load())
}
