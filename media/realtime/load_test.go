package realtime

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
)

// The load test: N realtime sessions in audio loopback (no STT, model or
// TTS), each streaming a caller who talks three seconds and then listens,
// both ways in real time, PCM16 at 24 kHz (VOICED_LOAD_FORMAT=audio/pcm:
// 16 kHz). The server runs in a child process so its CPU is measured apart
// from the clients', which share the machine. Run with
//
//	VOICED_LOAD_SESSIONS=1000 go test -tags nolibopusfile -run '^$' -bench RealtimeLoad -benchtime 1x ./media/realtime/
//
// (default 200 sessions, 20 s of steady state: VOICED_LOAD_SECONDS;
// VOICED_LOAD_DELTA_FRAMES sets Config.DeltaFrames, the frames per audio
// delta, default 1; VOICED_LOAD_PACER_WORKERS the pacer's workers).
// VOICED_LOAD_SERVER_CPUS=0 runs the server under `taskset -c 0`, so that
// with the test binary itself under `taskset -c 1` the node has one core
// and the clients the other, as voicebench pins a node under test:
//
//	VOICED_LOAD_SERVER_CPUS=0 VOICED_LOAD_SESSIONS=1000 taskset -c 1 ./realtime.test -test.run '^$' -test.bench RealtimeLoad -test.benchtime 1x
//
// On a machine shared with other work, run the test binary under
// `chrt -r 10` (server and clients inherit it) so that the jitter measured
// is the node's and not the neighbours'.

const loadServerEnv = "VOICED_REALTIME_LOAD_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(loadServerEnv) != "" {
		runLoadServer()
		return
	}
	os.Exit(m.Run())
}

// loadAuth lets every key in, as one organization.
type loadAuth struct{}

func (loadAuth) Authenticate(context.Context, string) (int64, error) { return 1, nil }
func (loadAuth) Claim(context.Context, string) (Admission, error) {
	return Admission{}, ErrUnauthorized
}

// loadCalls admits everything and records nothing.
type loadCalls struct{ n atomic.Int64 }

func (c *loadCalls) AdmitAgent(context.Context, int64, int64) (Admission, error) {
	return Admission{}, ErrUnknownAgent
}
func (c *loadCalls) AdmitInline(context.Context, int64, json.RawMessage) (Admission, error) {
	return Admission{CallID: c.n.Add(1), OrgID: 1, Inline: true, Start: time.Now()}, nil
}
func (c *loadCalls) Record(context.Context, int64, string, agent.Event) error { return nil }
func (c *loadCalls) Finish(context.Context, int64, CallEnd) error             { return nil }

// runLoadServer serves loopback sessions on a loopback port, prints the
// address, and on end of stdin prints the pacer's statistics and exits.
func runLoadServer() {
	workers, _ := strconv.Atoi(os.Getenv("VOICED_LOAD_PACER_WORKERS"))
	pacer, err := pace.New(pace.Config{Workers: workers}, nil)
	if err != nil {
		panic(err)
	}
	frames, _ := strconv.Atoi(os.Getenv("VOICED_LOAD_DELTA_FRAMES"))
	srv, err := New(Config{Loopback: true, IdleTimeout: time.Hour, DeltaFrames: frames}, nil, Deps{Auth: loadAuth{}, Calls: &loadCalls{}, Pacer: pacer})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	if path := os.Getenv("VOICED_LOAD_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	fmt.Println(ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	st := pacer.Stats()
	b, _ := json.Marshal(map[string]any{"late_p99_us": st.LateP99.Microseconds(), "late_max_us": st.LateMax.Microseconds(),
		"cost_p99_us": st.CostP99.Microseconds(), "skipped": st.Skipped, "ticks": st.Ticks, "streams": st.Streams})
	fmt.Println(string(b))
	_ = srv.Close(context.Background())
	pacer.Close()
}

// cpuTicks reads a process's user+system CPU time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, nil
}

// jitterHist counts deviations of inter-arrival times from the audio
// each delta carries (20 ms, or more with VOICED_LOAD_DELTA_FRAMES), in
// 0.1 ms buckets.
type jitterHist struct {
	buckets [2000]atomic.Int64
	n       atomic.Int64
}

func (h *jitterHist) add(d time.Duration) {
	i := int(d / (100 * time.Microsecond))
	if i >= len(h.buckets) {
		i = len(h.buckets) - 1
	}
	h.buckets[i].Add(1)
	h.n.Add(1)
}

func (h *jitterHist) quantile(q float64) time.Duration {
	want := int64(math.Ceil(q * float64(h.n.Load())))
	var c int64
	for i := range h.buckets {
		c += h.buckets[i].Load()
		if c >= want {
			return time.Duration(i+1) * 100 * time.Microsecond
		}
	}
	return 0
}

// loadClient is one session's client side.
type loadClient struct {
	nc   net.Conn
	last time.Time
}

// maskedText frames a client text message (servers accept any mask; a
// fixed one lets every frame be built once).
func maskedText(p []byte) []byte {
	mask := [4]byte{1, 2, 3, 4}
	var buf bytes.Buffer
	_ = ws.WriteHeader(&buf, ws.Header{Fin: true, OpCode: ws.OpText, Masked: true, Mask: mask, Length: int64(len(p))})
	q := append([]byte(nil), p...)
	ws.Cipher(q, mask, 0)
	buf.Write(q)
	return buf.Bytes()
}

// loadFrames returns the caller's frames: three seconds of espeak speech,
// then three of silence, as ready-to-send append messages at rate (PCM16).
func loadFrames(b *testing.B, rate int) [][]byte {
	speech := loadWAV(b, "caller16k.wav")
	sig := append(append([]int16(nil), speech...), make([]int16, 3*16000+(48000-len(speech)))...)
	rs, err := resample.New(16000, rate, resample.QualityHigh)
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	out := make([]int16, rate/50)
	raw := make([]byte, 2*rate/50)
	var frames [][]byte
	for i := 0; i+320 <= len(sig); i += 320 {
		if _, err := rs.ProcessTo(out, sig[i:i+320]); err != nil {
			b.Fatal(err)
		}
		pcm.Int16ToBytesTo(raw, out)
		msg := `{"type":"input_audio_buffer.append","audio":"` + base64.StdEncoding.EncodeToString(raw) + `"}`
		frames = append(frames, maskedText([]byte(msg)))
	}
	return frames
}

func BenchmarkRealtimeLoad(b *testing.B) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("VOICED_LOAD_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	steady := 20 * time.Second
	if v, err := strconv.Atoi(os.Getenv("VOICED_LOAD_SECONDS")); err == nil && v > 0 {
		steady = time.Duration(v) * time.Second
	}
	// VOICED_LOAD_FORMAT=pcm16 (24 kHz, the default, OpenAI's) or
	// audio/pcm (16 kHz: no resampling on the way in).
	wire, rate := "pcm16", 24000
	if os.Getenv("VOICED_LOAD_FORMAT") == "audio/pcm" {
		wire, rate = "audio/pcm", 16000
	}
	frames := loadFrames(b, rate)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if cpus := os.Getenv("VOICED_LOAD_SERVER_CPUS"); cpus != "" {
		// taskset execs the server in its own process, so the pid (and the
		// CPU time read from /proc) is the server's.
		cmd = exec.Command("taskset", "-c", cpus, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), loadServerEnv+"=1")
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	out := bufio.NewReader(stdoutPipe)
	addrLine, err := out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	addr := strings.TrimSpace(addrLine)

	var hist jitterHist
	var audioFrames atomic.Int64
	clients := make([]*loadClient, n)
	update := maskedText([]byte(`{"type":"session.update","session":{"instructions":"load","audio":{"input":{"format":"` + wire +
		`"},"output":{"format":"` + wire + `"}}}}`))
	var readers sync.WaitGroup
	var measuring atomic.Bool
	// Server closes before the end of the run: each one's close status and
	// reason and the code of the last error event before it; a socket that
	// ends without a close frame is a silent close.
	var ending atomic.Bool
	var closesMu sync.Mutex
	closes := map[string]int{}
	closed := func(what string) {
		if ending.Load() {
			return
		}
		closesMu.Lock()
		closes[what]++
		closesMu.Unlock()
	}
	for i := range clients {
		nc, br, _, err := ws.Dialer{Header: ws.HandshakeHeaderHTTP(http.Header{"Authorization": {"Bearer load"}})}.Dial(context.Background(), "ws://"+addr+"/v1/realtime")
		if err != nil {
			b.Fatalf("session %d: %v", i, err)
		}
		c := &loadClient{nc: nc}
		clients[i] = c
		if _, err := nc.Write(update); err != nil {
			b.Fatal(err)
		}
		r := io.Reader(nc)
		if br != nil {
			r = io.MultiReader(br, nc)
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			rd := bufio.NewReaderSize(r, 64<<10)
			prefix := []byte(`{"type":"response.output_audio.delta"`)
			deltaKey := []byte(`"delta":"`)
			errPrefix := []byte(`{"type":"error"`)
			buf := make([]byte, 0, 4096)
			lastErr := ""
			for {
				h, err := ws.ReadHeader(rd)
				if err != nil {
					closed("silent: " + err.Error())
					return
				}
				buf = slices.Grow(buf[:0], int(h.Length))[:h.Length]
				if _, err := io.ReadFull(rd, buf); err != nil {
					closed("silent: " + err.Error())
					return
				}
				if h.OpCode == ws.OpClose {
					code, reason := ws.ParseCloseFrameData(buf)
					closed(fmt.Sprintf("%d %q after error %s", code, reason, cmp.Or(lastErr, "(none)")))
					return
				}
				if h.OpCode == ws.OpText && bytes.HasPrefix(buf, errPrefix) {
					var ev struct {
						Error struct{ Code string } `json:"error"`
					}
					_ = json.Unmarshal(buf, &ev)
					lastErr = ev.Error.Code
				}
				if h.OpCode != ws.OpText || !bytes.HasPrefix(buf, prefix) {
					continue
				}
				now := time.Now()
				// The delta's audio: it left the server that long after
				// the previous one.
				var dur time.Duration
				if i := bytes.Index(buf, deltaKey); i >= 0 {
					b64 := buf[i+len(deltaKey):]
					b64 = b64[:max(bytes.IndexByte(b64, '"'), 0)]
					dur = time.Duration(base64.StdEncoding.DecodedLen(len(b64))-bytes.Count(b64[max(len(b64)-2, 0):], []byte("="))) *
						time.Second / time.Duration(2*rate)
				}
				if measuring.Load() {
					audioFrames.Add(int64(dur / (20 * time.Millisecond)))
					if gap := now.Sub(c.last); gap < dur+80*time.Millisecond {
						d := gap - dur
						if d < 0 {
							d = -d
						}
						hist.add(d)
					}
				}
				c.last = now
			}
		}()
	}
	// Senders: twenty shards, each ticking every 20 ms and writing the next
	// frame to its clients, a millisecond apart (independent callers send
	// at any phase of the frame; one burst of every session at once would
	// make the clients' own sending the measured jitter); clients start at
	// different points of the talk/listen cycle.
	stop := make(chan struct{})
	var sendErrs atomic.Int64
	var senders sync.WaitGroup
	const shards = 20
	for s := range shards {
		senders.Add(1)
		go func() {
			defer senders.Done()
			time.Sleep(time.Duration(s) * time.Millisecond)
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			k := 0
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				for i := s; i < n; i += shards {
					f := frames[(k+i*7)%len(frames)]
					_ = clients[i].nc.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := clients[i].nc.Write(f); err != nil {
						sendErrs.Add(1)
					}
				}
				k++
			}
		}()
	}
	b.ResetTimer()
	time.Sleep(8 * time.Second) // every session through a full cycle
	measuring.Store(true)
	c0, err := cpuTicks(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	self0, _ := cpuTicks(os.Getpid())
	t0 := time.Now()
	time.Sleep(steady)
	c1, _ := cpuTicks(cmd.Process.Pid)
	self1, _ := cpuTicks(os.Getpid())
	wall := time.Since(t0)
	measuring.Store(false)
	b.StopTimer()
	ending.Store(true)
	close(stop)
	senders.Wait()
	_ = stdin.Close()
	statsLine, _ := out.ReadString('\n')
	for _, c := range clients {
		c.nc.Close()
	}
	readers.Wait()
	_ = cmd.Wait()

	const hz = 100 // USER_HZ
	cpuSec := float64(c1-c0) / hz
	b.ReportMetric(float64(n), "sessions")
	b.ReportMetric(float64(sendErrs.Load()), "client-send-errors")
	silent, serverCloses := 0, 0
	for what, k := range closes {
		b.Logf("%d sessions closed by the server mid-run: %s", k, what)
		serverCloses += k
		if strings.HasPrefix(what, "silent") || strings.Contains(what, "(none)") {
			silent += k
		}
	}
	b.ReportMetric(float64(serverCloses), "server-closes")
	b.ReportMetric(float64(silent), "closes-without-reason")
	b.ReportMetric(100*cpuSec/wall.Seconds(), "server-cpu-%")
	b.ReportMetric(100*cpuSec/wall.Seconds()/float64(n), "cpu-%-per-session")
	b.ReportMetric(100*float64(self1-self0)/hz/wall.Seconds(), "client-cpu-%")
	b.ReportMetric(float64(audioFrames.Load())/wall.Seconds()/float64(n), "frames/s/session")
	b.ReportMetric(float64(hist.quantile(0.5))/1e6, "jitter-p50-ms")
	b.ReportMetric(float64(hist.quantile(0.99))/1e6, "jitter-p99-ms")
	var st map[string]float64
	if json.Unmarshal([]byte(statsLine), &st) == nil {
		b.ReportMetric(st["late_p99_us"]/1000, "pacer-late-p99-ms")
		b.ReportMetric(st["cost_p99_us"]/1000, "pacer-tick-p99-ms")
		b.ReportMetric(st["skipped"], "pacer-skipped")
	}
}
