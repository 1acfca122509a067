package webrtc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/rtp"
	pion "github.com/pion/webrtc/v4"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/opus"
)

// The load probe: N concurrent calls from pion clients in another process
// (so their CPU is not counted), real Opus both ways all the time (the
// server echoes every frame it decodes, so it decodes, encodes and sends
// continuously), measured over a steady window:
//
//	VOICED_WEBRTC_LOAD=200 VOICED_WEBRTC_LOAD_SECONDS=20 \
//	  go test -tags nolibopusfile -run 'TestLoad$' -v ./media/webrtc/
//
// It reports the server's CPU per call, the calls one core would carry,
// the pacer's tick lateness and the clients' packet inter-arrival
// deviation (pacing jitter as received), with VOICED_WEBRTC_LOAD_PROFILE
// naming a CPU profile of the window, VOICED_WEBRTC_LOAD_COMPLEXITY the
// encoder's complexity, VOICED_WEBRTC_LOAD_SILK_FEC the node encoding SILK
// with FEC as after reported loss (CELT otherwise),
// VOICED_WEBRTC_LOAD_FULLBAND clients that ignore maxplaybackrate, and
// VOICED_WEBRTC_LOAD_HALF_TALK an agent that talks half the time. It is
// not part of the normal run.

// frameEcho is the load's conversation: every caller frame straight back,
// or with halfTalk only in alternate 2 s stretches, as an agent that talks
// half the time (its silence is not encoded).
type frameEcho struct {
	last     []int16
	halfTalk bool
	n        int
}

func (e *frameEcho) WriteFrame(in []int16) error { copy(e.last, in); return nil }

func (e *frameEcho) ReadFrame(out []int16) {
	e.n++
	if e.halfTalk && e.n/100%2 == 1 {
		clear(out)
		return
	}
	copy(out, e.last)
}

func TestLoad(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("VOICED_WEBRTC_LOAD"))
	if n <= 0 {
		t.Skip("load probe: set VOICED_WEBRTC_LOAD=N")
	}
	secs, _ := strconv.Atoi(os.Getenv("VOICED_WEBRTC_LOAD_SECONDS"))
	if secs <= 0 {
		secs = 20
	}
	cfg := testConfig()
	cfg.MaxSessions = n + 10
	cfg.DisconnectedTimeout, cfg.FailedTimeout = 0, 0
	cfg.Complexity, _ = strconv.Atoi(os.Getenv("VOICED_WEBRTC_LOAD_COMPLEXITY"))
	halfTalk := os.Getenv("VOICED_WEBRTC_LOAD_HALF_TALK") != ""
	silkFEC := os.Getenv("VOICED_WEBRTC_LOAD_SILK_FEC") != ""
	s := newTestServer(t, cfg)
	var runs sync.WaitGroup
	var mu sync.Mutex
	var sessions []*Session
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offer, _ := io.ReadAll(r.Body)
		sess, answer, err := s.Answer(r.Context(), string(offer), SessionOptions{})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		mu.Lock()
		sessions = append(sessions, sess)
		mu.Unlock()
		if silkFEC {
			sess.lossy.Store(true) // as if the browser had reported loss
		}
		runs.Go(func() { _ = sess.Run(&frameEcho{last: make([]int16, sess.inSamples), halfTalk: halfTalk}) })
		_, _ = w.Write([]byte(answer))
	})}
	go hs.Serve(ln)
	defer hs.Close()

	window := time.Duration(secs) * time.Second
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadClient$", "-test.v")
	cmd.Env = append(os.Environ(), "VOICED_WEBRTC_LOAD_CLIENT=http://"+ln.Addr().String(), fmt.Sprint("VOICED_WEBRTC_LOAD_CALLS=", n),
		fmt.Sprint("VOICED_WEBRTC_LOAD_HOLD=", int((window+15*time.Second).Seconds())))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		c := 0
		for _, x := range sessions {
			if x.Connected() {
				c++
			}
		}
		return c == n
	}, 120*time.Second, 100*time.Millisecond, "client output: %s", &out)
	time.Sleep(3 * time.Second) // settle

	if p := os.Getenv("VOICED_WEBRTC_LOAD_PROFILE"); p != "" {
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		defer f.Close()
	}
	// packets sums the sessions' packets in and out and concealed frames.
	packets := func() (in, out, conc uint64) {
		mu.Lock()
		defer mu.Unlock()
		for _, x := range sessions {
			st := x.Stats()
			in, out, conc = in+st.Quality.PacketsReceived, out+st.Quality.PacketsSent, conc+st.Playout.Concealed
		}
		return in, out, conc
	}
	in0, out0, _ := packets()
	before := s.pacer.Stats()
	var r0 syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &r0))
	start := time.Now()
	time.Sleep(window)
	var r1 syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &r1))
	elapsed := time.Since(start)
	if os.Getenv("VOICED_WEBRTC_LOAD_PROFILE") != "" {
		pprof.StopCPUProfile()
	}
	after := s.pacer.Stats()
	cpu := time.Duration(syscall.TimevalToNsec(r1.Utime)+syscall.TimevalToNsec(r1.Stime)) -
		time.Duration(syscall.TimevalToNsec(r0.Utime)+syscall.TimevalToNsec(r0.Stime))
	perCall := cpu.Seconds() / elapsed.Seconds() / float64(n)
	in, outP, conc := packets()
	require.NoError(t, cmd.Wait(), "client: %s", &out)
	t.Logf("Opus complexity %d, node encodes %s, clients send %s, agent talking %s", s.cfg.Complexity,
		map[bool]string{false: "CELT", true: "SILK with FEC"}[silkFEC], map[bool]string{false: "fullband", true: "as the answer's maxplaybackrate says"}[os.Getenv("VOICED_WEBRTC_LOAD_FULLBAND") == ""],
		map[bool]string{false: "all the time", true: "half the time"}[halfTalk])
	t.Logf("%d calls, %v window: server CPU %.2f cores, %.2f%% of a core per call, %.0f calls per core",
		n, elapsed.Round(time.Millisecond), cpu.Seconds()/elapsed.Seconds(), 100*perCall, 1/perCall)
	t.Logf("pacer: %d ticks, late p50 %v p99 %v max %v, tick cost p99 %v (before the window: late p99 %v)",
		after.Ticks-before.Ticks, after.LateP50, after.LateP99, after.LateMax, after.CostP99, before.LateP99)
	t.Logf("server packets in %d, out %d, concealed frames %d", in, outP, conc)
	// On a busy machine ticks come late and some work is skipped; per
	// packet handled the CPU figure does not depend on it.
	if handled := in + outP - in0 - out0; handled > 0 {
		perPkt := cpu.Seconds() / float64(handled)
		t.Logf("per packet handled (in or out): %.1f µs of server CPU, %.0f calls per core at 50 packets a second each way",
			perPkt*1e6, 1/(perPkt*100))
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "load client:") {
			t.Log(strings.TrimSpace(l))
		}
	}
	require.Greater(t, outP, uint64(n*50*secs/4), "audio went out")
}

// TestLoadClient is the load probe's client process.
func TestLoadClient(t *testing.T) {
	url := os.Getenv("VOICED_WEBRTC_LOAD_CLIENT")
	if url == "" {
		t.Skip("the load probe's client process (run by TestLoad)")
	}
	n, _ := strconv.Atoi(os.Getenv("VOICED_WEBRTC_LOAD_CALLS"))
	hold, _ := strconv.Atoi(os.Getenv("VOICED_WEBRTC_LOAD_HOLD"))
	// One second of a voiced signal, encoded once and replayed by every
	// call: fullband (hybrid packets, as browsers send by default), and
	// wideband (SILK) for calls whose answer says maxplaybackrate=16000,
	// which libwebrtc turns into its encoder's bandwidth limit. With
	// VOICED_WEBRTC_LOAD_FULLBAND the clients ignore it.
	encode := func(rate int) [][]byte {
		enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: rate})
		require.NoError(t, err)
		var packets [][]byte
		pcm := make([]int16, rate/50)
		for i := range 50 {
			for k := range pcm {
				x := float64(i*len(pcm)+k) / float64(rate)
				pcm[k] = int16(6000 * (1 + 0.5*math.Sin(2*math.Pi*3*x)) * (math.Sin(2*math.Pi*180*x) + 0.5*math.Sin(2*math.Pi*360*x) + 0.25*math.Sin(2*math.Pi*720*x)) / 1.75)
			}
			b := make([]byte, opus.MaxPacketSize)
			k, err := enc.EncodeTo(b, pcm)
			require.NoError(t, err)
			packets = append(packets, b[:k])
		}
		return packets
	}
	fullband, wideband := encode(48000), encode(16000)
	honor := os.Getenv("VOICED_WEBRTC_LOAD_FULLBAND") == ""
	m := &pion.MediaEngine{}
	require.NoError(t, m.RegisterDefaultCodecs())
	se := pion.SettingEngine{}
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	// Each call gets its own loopback port, as browsers have: the server's
	// mux tells calls apart by their address.
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	api := pion.NewAPI(pion.WithMediaEngine(m), pion.WithSettingEngine(se))

	var hist [2001]atomic.Uint64 // inter-arrival deviation in 0.1 ms, last bucket 200 ms+
	var received atomic.Uint64
	tracks := make([]*pion.TrackLocalStaticRTP, n)
	streams := make([][][]byte, n)
	pcs := make([]*pion.PeerConnection, n)
	for i := range n {
		pc, err := api.NewPeerConnection(pion.Configuration{})
		require.NoError(t, err)
		pcs[i] = pc
		tr, err := pion.NewTrackLocalStaticRTP(pion.RTPCodecCapability{MimeType: pion.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "mic", "load")
		require.NoError(t, err)
		tracks[i] = tr
		_, err = pc.AddTransceiverFromTrack(tr, pion.RTPTransceiverInit{Direction: pion.RTPTransceiverDirectionSendrecv})
		require.NoError(t, err)
		pc.OnTrack(func(tr *pion.TrackRemote, _ *pion.RTPReceiver) {
			buf := make([]byte, 1500)
			var last time.Time
			for {
				if _, _, err := tr.Read(buf); err != nil {
					return
				}
				now := time.Now()
				received.Add(1)
				if !last.IsZero() {
					d := now.Sub(last) - 20*time.Millisecond
					if d < 0 {
						d = -d
					}
					hist[min(int(d/(100*time.Microsecond)), 2000)].Add(1)
				}
				last = now
			}
		})
		offer, err := pc.CreateOffer(nil)
		require.NoError(t, err)
		g := pion.GatheringCompletePromise(pc)
		require.NoError(t, pc.SetLocalDescription(offer))
		<-g
		res, err := http.Post(url, "application/sdp", strings.NewReader(pc.LocalDescription().SDP))
		require.NoError(t, err)
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode, string(answer))
		require.NoError(t, pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: string(answer)}))
		streams[i] = fullband
		if honor && strings.Contains(string(answer), "maxplaybackrate=16000") {
			streams[i] = wideband
		}
	}
	// One sender for every call, one packet per call per 20 ms.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(hold)*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111}}
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		pkt.SequenceNumber, pkt.Timestamp = uint16(i), uint32(i*960)
		for k, tr := range tracks {
			pkt.Payload = streams[k][i%50]
			_ = tr.WriteRTP(&pkt)
		}
	}
	var total uint64
	var counts []uint64
	for i := range hist {
		c := hist[i].Load()
		total += c
		counts = append(counts, c)
	}
	q := func(p float64) float64 {
		var acc uint64
		for i, c := range counts {
			acc += c
			if float64(acc) >= p*float64(total) {
				return float64(i) / 10
			}
		}
		return 200
	}
	for _, pc := range pcs {
		_ = pc.Close()
	}
	summary, _ := json.Marshal(map[string]any{"calls": n, "packets_received": received.Load(), "interarrival_dev_p50_ms": q(0.5),
		"interarrival_dev_p99_ms": q(0.99), "interarrival_dev_p999_ms": q(0.999)})
	fmt.Printf("load client: %s\n", summary)
}
