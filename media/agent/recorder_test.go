package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
)

// Many calls' recordings are written by a few shared goroutines, not one
// each; every sample of every call reaches its file, paired in order, and
// the writers stop once the last recording is closed.
func TestRecordersShareWriters(t *testing.T) {
	const calls, bursts, perBurst = 40, 3, 10
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	w := testRecorders(t)
	recs := make([]*recorder, calls)
	for i := range recs {
		r, err := newRecorder(w, filepath.Join(dir, "rec", strconv.Itoa(i)+".wav"), media.Rate8k, media.Rate16k)
		require.NoError(t, err)
		recs[i] = r
	}
	require.LessOrEqual(t, runtime.NumGoroutine()-base, runtime.GOMAXPROCS(0), "at most one writer per shard")

	n := media.SamplesPerFrame(media.Rate8k)
	agentFrame := func(call, k int) []int16 {
		f := make([]int16, n)
		for j := range f {
			f[j] = int16((call*7 + k*13 + j*5) % 2000)
		}
		return f
	}
	callerPCM := func(call, k int) []int16 {
		f := make([]int16, callerFrame)
		for j := range f {
			f[j] = int16(call*100 + k*3 + j%7 + 1)
		}
		return f
	}
	// Odd calls also hand over each caller frame as the transport decoded
	// it, at 8 kHz: that frame is recorded as it is.
	decoded := func(call, k int) []int16 {
		if call%2 == 0 {
			return nil
		}
		f := make([]int16, n)
		for j := range f {
			f[j] = int16(-call*50 - k - j%5)
		}
		return f
	}
	// Each call's pacer and input sides feed it from their own goroutines,
	// a burst at a time; between bursts the shared writers drain the rings.
	for b := range bursts {
		var wg sync.WaitGroup
		for i, r := range recs {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for k := b * perBurst; k < (b+1)*perBurst; k++ {
					r.tick(agentFrame(i, k))
				}
			}()
			go func() {
				defer wg.Done()
				for k := b * perBurst; k < (b+1)*perBurst; k++ {
					r.callerFrame(callerPCM(i, k), decoded(i, k))
				}
			}()
		}
		wg.Wait()
		for _, r := range recs {
			r.mu.Lock()
			caller, agent := r.pos[recCaller], r.pos[recAgent]
			r.mu.Unlock()
			require.Equal(t, caller, agent, "every frame is paired once both sides have sent it")
		}
	}
	for _, r := range recs {
		require.NoError(t, r.close())
		require.NoError(t, r.close(), "idempotent")
	}
	if !waitUntil(func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("the writers stop with the last recording: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
	}

	total := bursts * perBurst
	for i := range recs {
		f, err := os.Open(filepath.Join(dir, "rec", strconv.Itoa(i)+".wav"))
		require.NoError(t, err)
		format, pcm, err := wav.ReadAll(f)
		f.Close()
		require.NoError(t, err)
		// A G.711 call is recorded at its own 8 kHz in µ-law: the agent's
		// frames as they were played, the caller's as decoded or else
		// brought down from 16 kHz, each as µ-law carries it.
		require.Equal(t, wav.Format{Encoding: wav.ULaw, SampleRate: 8000, Channels: 2}, format)
		require.Len(t, pcm, 2*n*total)
		rs, err := resample.New(media.Rate16k, media.Rate8k, resample.QualityLow)
		require.NoError(t, err)
		c8 := make([]int16, n)
		for k := range total {
			_, err := rs.ProcessTo(c8, callerPCM(i, k))
			require.NoError(t, err)
			if d := decoded(i, k); d != nil {
				c8 = d
			}
			a := agentFrame(i, k)
			for j := range n {
				require.Equal(t, ulaw(c8[j]), pcm[2*(k*n+j)], "call %d frame %d caller", i, k)
				require.Equal(t, ulaw(a[j]), pcm[2*(k*n+j)+1], "call %d frame %d agent", i, k)
			}
		}
		rs.Close()
	}
}

// Close stops the writers of recordings still open and waits for them:
// none is left running (no leak), what they had ready is in the files, a
// recording open across Close still finishes its file at its own close,
// and no recording starts after it.
func TestRecordersCloseStopsWriters(t *testing.T) {
	dir := t.TempDir()
	w := NewRecorders(4)
	n := media.SamplesPerFrame(media.Rate8k)
	perChunk := recChunk / (2 * n)
	recs := make([]*recorder, 8)
	for i := range recs {
		r, err := newRecorder(w, filepath.Join(dir, strconv.Itoa(i)+".wav"), media.Rate8k, media.Rate8k)
		require.NoError(t, err)
		recs[i] = r
		for range perChunk + 1 { // a full chunk for the writer, and a frame
			r.tick(make([]int16, n))
			r.callerFrame(make([]int16, n), nil)
		}
	}
	require.Equal(t, 4, writers(), "a writer per shard while recordings are open")

	require.NoError(t, w.Close())
	require.Zero(t, writers(), "Close waited for every writer")
	require.NoError(t, w.Close(), "idempotent")
	for i, r := range recs {
		r.mu.Lock()
		ready := len(r.ready)
		r.mu.Unlock()
		require.Zero(t, ready, "recording %d: the writer wrote its ready chunk before it stopped", i)
	}
	_, err := newRecorder(w, filepath.Join(dir, "late.wav"), media.Rate8k, media.Rate8k)
	require.ErrorIs(t, err, ErrRecordersClosed)
	_, err = os.Stat(filepath.Join(dir, "late.wav"))
	require.ErrorIs(t, err, os.ErrNotExist, "no file left behind")

	for i, r := range recs {
		require.NoError(t, r.close())
		f, err := os.Open(filepath.Join(dir, strconv.Itoa(i)+".wav"))
		require.NoError(t, err)
		_, pcm, err := wav.ReadAll(f)
		f.Close()
		require.NoError(t, err)
		require.Len(t, pcm, 2*n*(perChunk+1), "recording %d: every frame", i)
	}
	require.Zero(t, writers())
}

// writers counts the goroutines running a Recorders writer.
func writers() int {
	// Every goroutine's stack, in a buffer big enough for all of them: a
	// truncated dump would miss writers. A writer is counted by its
	// creator, not by its top frame: one that has not run yet shows only
	// the go statement's wrapper (add.gowrap1), not write, and a loaded
	// machine leaves all four unscheduled for a while.
	for size := 1 << 20; ; size *= 2 {
		buf := make([]byte, size)
		if n := runtime.Stack(buf, true); n < size {
			return strings.Count(string(buf[:n]), "created by github.com/voiced/voiced/media/agent.(*Recorders).add ")
		}
	}
}

// A recording whose file cannot be written reports the error from close,
// and the others on its shard are unaffected.
func TestRecorderWriteErrorFromClose(t *testing.T) {
	dir := t.TempDir()
	w := testRecorders(t)
	bad, err := newRecorder(w, filepath.Join(dir, "bad.wav"), media.Rate8k, media.Rate16k)
	require.NoError(t, err)
	good, err := newRecorder(w, filepath.Join(dir, "good.wav"), media.Rate8k, media.Rate16k)
	require.NoError(t, err)
	require.NoError(t, bad.f.Close()) // every later write to it fails
	n := media.SamplesPerFrame(media.Rate8k)
	for range 400 { // 8 s: more than the 64 KB buffer of each file (4 s)
		bad.tick(make([]int16, n))
		bad.callerFrame(make([]int16, callerFrame), nil)
		good.tick(make([]int16, n))
		good.callerFrame(make([]int16, callerFrame), nil)
		good.mu.Lock()
		full := len(good.ready)
		good.mu.Unlock()
		if full > 0 {
			time.Sleep(recDrainEvery)
		}
	}
	require.Error(t, bad.close())
	require.NoError(t, good.close())
	f, err := os.Open(filepath.Join(dir, "good.wav"))
	require.NoError(t, err)
	defer f.Close()
	_, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, 2*n*400, len(pcm), "every frame of the good file (8 kHz stereo)")
}

// testRecorders are Recorders closed when the test ends.
func testRecorders(tb testing.TB) *Recorders {
	w := NewRecorders(0)
	tb.Cleanup(func() { w.Close() })
	return w
}

// waitUntil polls f for up to 5 s on the calling goroutine
// (require.Eventually's own goroutines would count in NumGoroutine).
func waitUntil(f func() bool) bool {
	for range 500 {
		if f() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// BenchmarkRecorderDrain is one recorder's 100 ms: five agent and five
// caller frames paired into the file's chunk, and the shard's visit. A
// shard's batch takes about this times its calls.
func BenchmarkRecorderDrain(b *testing.B) {
	for _, rate := range []int{media.Rate8k, media.Rate16k, media.Rate24k} {
		b.Run(strconv.Itoa(rate/1000)+"k", func(b *testing.B) { benchRecorderDrain(b, rate) })
	}
}

func benchRecorderDrain(b *testing.B, rate int) {
	r, err := newRecorder(testRecorders(b), filepath.Join(b.TempDir(), "call.wav"), rate, media.Rate16k)
	require.NoError(b, err)
	agent, caller := make([]int16, media.SamplesPerFrame(rate)), make([]int16, callerFrame)
	for i := range agent {
		agent[i] = int16(i)
	}
	for i := range caller {
		caller[i] = int16(-i)
	}
	b.ReportAllocs()
	for b.Loop() {
		for range 5 {
			r.tick(agent)
			r.callerFrame(caller, nil)
		}
		r.flush()
	}
	require.NoError(b, r.close())
}

// BenchmarkRecorderCalls is the recording's share of one pacer tick of
// 600 G.711 calls (8 kHz agent, caller frames as decoded), with the
// agents speaking half the time and the shard's writes every fifth tick:
// at this many calls a call's recording state is out of the cache
// between two ticks, which one recorder alone does not show.
func BenchmarkRecorderCalls(b *testing.B) {
	const calls = 600
	n := media.SamplesPerFrame(media.Rate8k)
	dir := b.TempDir()
	w := testRecorders(b)
	recs := make([]*recorder, calls)
	for i := range recs {
		r, err := newRecorder(w, filepath.Join(dir, strconv.Itoa(i)+".wav"), media.Rate8k, media.Rate8k)
		require.NoError(b, err)
		recs[i] = r
	}
	agent, caller := make([]int16, n), make([]int16, n)
	for i := range agent {
		agent[i], caller[i] = int16(i*31), int16(-i*17)
	}
	tick := 0
	b.ReportAllocs()
	for b.Loop() {
		for i, r := range recs {
			if (tick/50+i)%2 == 0 {
				r.tick(agent)
			} else {
				r.tick(nil)
			}
			r.callerFrame(caller, caller)
		}
		tick++
		if tick%5 == 0 {
			for _, r := range recs {
				r.flush()
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call-tick")
	for _, r := range recs {
		require.NoError(b, r.close())
	}
}

// A call whose file falls more than recMaxReady chunks behind loses the
// newest audio rather than growing without bound, and close says so; what
// was kept is a valid file.
func TestRecorderFallsBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.wav")
	r, err := newRecorder(testRecorders(t), path, media.Rate8k, media.Rate8k)
	require.NoError(t, err)
	n := media.SamplesPerFrame(media.Rate8k)
	perChunk := recChunk / (2 * n) // µ-law stereo
	frame := make([]int16, n)
	// 8 chunks wait, the 9th is dropped, half a 10th is being filled.
	frames := (recMaxReady+1)*perChunk + perChunk/2
	r.wmu.Lock() // the shard's writer waits here, as for a stalled disk
	for range frames {
		r.tick(frame)
		r.callerFrame(frame, frame)
	}
	r.mu.Lock()
	ready, lost := len(r.ready), r.lost
	r.mu.Unlock()
	r.wmu.Unlock()
	require.Equal(t, recMaxReady, ready)
	require.Equal(t, int64(perChunk*2*n), lost, "one chunk's worth dropped")
	err = r.close()
	require.ErrorContains(t, err, "fell behind")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, (recMaxReady*perChunk+perChunk/2)*2*n, len(pcm), "the chunks kept and the one being filled")
}

// An agent frame waits recAgentWait frames for its caller frame and
// caller audio recCallerWait frames for agent audio; then they are written
// against silence, in order, and close writes whatever still waits.
func TestRecorderPairing(t *testing.T) {
	n := media.SamplesPerFrame(media.Rate8k)
	// level is a distinct µ-law level for each v in -127..127, so that
	// the file, in µ-law, gives back exactly what went in.
	level := func(v int) int {
		if v < 0 {
			return int(g711.DecodeULaw(byte(0x7f + v)))
		}
		return int(g711.DecodeULaw(byte(0xff - v)))
	}
	frame := func(v int) []int16 {
		f := make([]int16, n)
		for i := range f {
			f[i] = int16(level(v))
		}
		return f
	}
	type pair struct{ caller, agent int }
	levels := func(ps []pair) []pair {
		for i, p := range ps {
			ps[i] = pair{level(p.caller), level(p.agent)}
		}
		return ps
	}
	record := func(t *testing.T, feed func(r *recorder)) []pair {
		path := filepath.Join(t.TempDir(), "call.wav")
		r, err := newRecorder(testRecorders(t), path, media.Rate8k, media.Rate8k)
		require.NoError(t, err)
		feed(r)
		require.NoError(t, r.close())
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		_, pcm, err := wav.ReadAll(f)
		require.NoError(t, err)
		var out []pair
		for k := 0; k < len(pcm); k += 2 * n {
			for j := 0; j < 2*n; j += 2 {
				require.Equal(t, pcm[k], pcm[k+j], "frame %d is constant", k/(2*n))
				require.Equal(t, pcm[k+1], pcm[k+j+1], "frame %d is constant", k/(2*n))
			}
			out = append(out, pair{int(pcm[k]), int(pcm[k+1])})
		}
		return out
	}
	t.Run("agent ahead", func(t *testing.T) {
		got := record(t, func(r *recorder) {
			for k := 1; k <= recAgentWait+2; k++ {
				r.tick(frame(100 + k))
			}
			r.tick(nil) // silence is a frame too
			for k := 1; k <= 3; k++ {
				r.callerFrame(frame(k), frame(k))
			}
		})
		// 13 agent frames: the first 3 waited too long for a caller frame.
		want := []pair{{0, 101}, {0, 102}, {0, 103}, {1, 104}, {2, 105}, {3, 106}}
		for k := 107; k <= 100+recAgentWait+2; k++ {
			want = append(want, pair{0, k})
		}
		want = append(want, pair{0, 0})
		require.Equal(t, levels(want), got)
	})
	t.Run("ahead across chunks", func(t *testing.T) {
		// The caller runs 20 frames ahead over the end of the first
		// chunk: its frames wait in the next chunk, half written, until
		// the agent's arrive.
		perChunk := recChunk / (2 * n)
		var want []pair
		got := record(t, func(r *recorder) {
			for k := range perChunk - 5 {
				v := k%50 + 1
				r.tick(frame(v))
				r.callerFrame(frame(-v), frame(-v))
				want = append(want, pair{-v, v})
			}
			for j := range 20 {
				r.callerFrame(frame(60+j), frame(60+j))
			}
			for j := range 20 {
				r.tick(frame(100 + j))
				want = append(want, pair{60 + j, 100 + j})
			}
		})
		require.Equal(t, levels(want), got)
	})
	t.Run("caller ahead", func(t *testing.T) {
		got := record(t, func(r *recorder) {
			for k := 1; k <= recCallerWait+2; k++ {
				r.callerFrame(frame(k), frame(k))
			}
			r.tick(frame(-1))
		})
		want := []pair{{1, 0}, {2, 0}, {3, -1}}
		for k := 4; k <= recCallerWait+2; k++ {
			want = append(want, pair{k, 0})
		}
		require.Equal(t, levels(want), got)
	})
}

// ulaw is x as a µ-law recording gives it back.
func ulaw(x int16) int16 { return g711.DecodeULaw(g711.EncodeULaw(x)) }
