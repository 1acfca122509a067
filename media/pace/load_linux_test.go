package pace

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// spinFor keeps the calling goroutine's P busy for d of wall time.
func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// processing is a stream whose PostTick costs what a call's received frame
// costs on the node (echo canceller, VAD, resampling: about 170 µs with
// the offline engine).
type processing struct{ cost time.Duration }

func (*processing) Tick(time.Time)       {}
func (s *processing) PostTick(time.Time) { spinFor(s.cost) }

// BenchmarkSendsUnderGoLoad is the node pacer of a 2-core media node
// (2 workers, PreciseWake, AlignSends, a Worker per worker) with 50 calls'
// per-frame processing in PostTick, while other goroutines keep both Ps
// busy in bursts, as the simulated callers' own pacer, SIP and the
// engine's goroutines do: the reproduction of 50 offline simulated calls
// in one process without PocketSphinx. Each iteration is one second of
// ticks. It reports the lateness of each tick's last sends (p50, p99,
// max, in µs): how long after the tick's time the last worker handed
// them over (a Worker such as media/rtp's then sends them at that time;
// handed over in time, 0). PACE_LOAD_RT sets Config.Realtime and PACE_LOAD_EXTRA_P
// adds that many Ps to GOMAXPROCS during the run, for comparisons
// (bench/RESULTS.md, "Pacer wake-ups without the Go scheduler").
func BenchmarkSendsUnderGoLoad(b *testing.B) {
	rt, _ := strconv.Atoi(os.Getenv("PACE_LOAD_RT"))
	extra, _ := strconv.Atoi(os.Getenv("PACE_LOAD_EXTRA_P"))
	const workers, calls, hogs = 2, 50, 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers + extra))
	p, err := New(Config{Workers: workers, PreciseWake: true, AlignSends: true, Realtime: rt,
		NewWorker: func(int) Worker { return nopWorker{} }}, nil)
	require.NoError(b, err)
	defer p.Close()
	for range calls {
		_, err := p.Register(&processing{cost: 100 * time.Microsecond})
		require.NoError(b, err)
	}
	// The load: hogs goroutines, each busy 1-4 ms then idle 0-12 ms
	// (about 0.4 of a P each) on top of the pacer's.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range hogs {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				spinFor(time.Millisecond + rand.N(3*time.Millisecond))
				time.Sleep(rand.N(12 * time.Millisecond))
			}
		})
	}
	time.Sleep(time.Second) // AlignSends learns the Ticks' cost
	before := p.Stats()
	for b.Loop() {
		time.Sleep(time.Second)
	}
	close(stop)
	wg.Wait()
	st := p.Stats()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(st.LateP50), "late-p50-µs")
	b.ReportMetric(us(st.LateP99), "late-p99-µs")
	b.ReportMetric(us(st.LateMax), "late-max-µs")
	b.ReportMetric(float64(st.Skipped-before.Skipped), "skipped")
}
