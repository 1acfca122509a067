package webrtc

import (
	"math"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	pion "github.com/pion/webrtc/v4"
	pmedia "github.com/pion/webrtc/v4/pkg/media"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/opus"
)

// testClient is a browser stand-in: a pion PeerConnection that sends Opus
// audio (tone bursts) and a data channel, and decodes what comes back.
type testClient struct {
	t     testing.TB
	pc    *pion.PeerConnection
	track *pion.TrackLocalStaticSample
	dc    *pion.DataChannel
	// mux is the client's own UDP socket on loopback, so a test can make
	// the client vanish (close the socket) without a DTLS close.
	mux *ice.UDPMuxDefault

	stop chan struct{}
	wg   sync.WaitGroup

	packetsIn, voicedIn atomic.Int64
	// toneEnd is when the first turn's last tone frame was sent and
	// firstVoiced when the first voiced packet came back (Unix ns).
	toneEnd, firstVoiced atomic.Int64
	energyIn             atomic.Uint64 // sum of per-frame mean squares of decoded audio
	lastTOC              atomic.Uint32 // the TOC byte of the last audio packet received
	connected            chan struct{}
	messages             chan string
}

type clientOptions struct {
	// relayOnly makes the client use only TURN relay candidates of turn.
	relayOnly bool
	turn      *ICEServer
	// silent sends silence instead of tone bursts.
	silent bool
}

// newTestClient builds a client and its offer (ICE gathering complete).
func newTestClient(t testing.TB, o clientOptions) (*testClient, string) {
	t.Helper()
	m := &pion.MediaEngine{}
	require.NoError(t, m.RegisterDefaultCodecs())
	se := pion.SettingEngine{}
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	mux := ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: conn})
	se.SetICEUDPMux(mux)
	// Receiver reports, as browsers send them.
	ir := &interceptor.Registry{}
	require.NoError(t, pion.ConfigureRTCPReports(ir))
	api := pion.NewAPI(pion.WithMediaEngine(m), pion.WithSettingEngine(se), pion.WithInterceptorRegistry(ir))
	cfg := pion.Configuration{}
	if o.turn != nil {
		cfg.ICEServers = []pion.ICEServer{{URLs: o.turn.URLs, Username: o.turn.Username, Credential: o.turn.Credential}}
	}
	if o.relayOnly {
		cfg.ICETransportPolicy = pion.ICETransportPolicyRelay
	}
	pc, err := api.NewPeerConnection(cfg)
	require.NoError(t, err)
	c := &testClient{t: t, pc: pc, mux: mux, stop: make(chan struct{}), connected: make(chan struct{}), messages: make(chan string, 64)}
	c.track, err = pion.NewTrackLocalStaticSample(pion.RTPCodecCapability{MimeType: pion.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "mic", "client")
	require.NoError(t, err)
	_, err = pc.AddTransceiverFromTrack(c.track, pion.RTPTransceiverInit{Direction: pion.RTPTransceiverDirectionSendrecv})
	require.NoError(t, err)
	c.dc, err = pc.CreateDataChannel("events", nil)
	require.NoError(t, err)
	c.dc.OnMessage(func(m pion.DataChannelMessage) {
		select {
		case c.messages <- string(m.Data):
		default:
		}
	})
	var once sync.Once
	pc.OnConnectionStateChange(func(s pion.PeerConnectionState) {
		if s == pion.PeerConnectionStateConnected {
			once.Do(func() { close(c.connected) })
		}
	})
	pc.OnTrack(func(tr *pion.TrackRemote, _ *pion.RTPReceiver) {
		dec, err := opus.NewDecoder(48000, 1)
		if err != nil {
			return
		}
		pcm := make([]int16, 5760)
		for {
			pkt, _, err := tr.ReadRTP()
			if err != nil {
				return
			}
			c.packetsIn.Add(1)
			if len(pkt.Payload) > 2 { // not DTX
				c.lastTOC.Store(uint32(pkt.Payload[0]))
			}
			n, err := dec.DecodeTo(pcm, pkt.Payload)
			if err != nil || n == 0 {
				continue
			}
			var sum int64
			for _, v := range pcm[:n] {
				sum += int64(v) * int64(v)
			}
			ms := uint64(sum / int64(n))
			c.energyIn.Add(ms)
			if math.Sqrt(float64(ms)) > voicedRMS {
				c.voicedIn.Add(1)
				c.firstVoiced.CompareAndSwap(0, time.Now().UnixNano())
			}
		}
	})
	offer, err := pc.CreateOffer(nil)
	require.NoError(t, err)
	gathered := pion.GatheringCompletePromise(pc)
	require.NoError(t, pc.SetLocalDescription(offer))
	select {
	case <-gathered:
	case <-time.After(10 * time.Second):
		t.Fatal("client ICE gathering timed out")
	}
	if !o.silent {
		c.wg.Go(c.sendTone)
	} else {
		c.wg.Go(c.sendSilence)
	}
	return c, pc.LocalDescription().SDP
}

// answer applies the server's answer.
func (c *testClient) answer(sdp string) {
	c.t.Helper()
	require.NoError(c.t, c.pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: sdp}))
}

func (c *testClient) waitConnected(d time.Duration) {
	c.t.Helper()
	select {
	case <-c.connected:
	case <-time.After(d):
		c.t.Fatalf("client did not connect within %v", d)
	}
}

// sendTone sends turns of a 440 Hz tone at about -12 dBFS: 600 ms of tone
// then 1 s of silence, as 20 ms Opus frames.
func (c *testClient) sendTone() { c.send(false) }

func (c *testClient) sendSilence() { c.send(true) }

func (c *testClient) send(silent bool) {
	enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: 48000})
	if err != nil {
		return
	}
	frame := make([]int16, 960)
	pkt := make([]byte, opus.MaxPacketSize)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		inTurn := !silent && i%80 < 30
		for k := range frame {
			if inTurn {
				frame[k] = int16(8000 * math.Sin(2*math.Pi*440*float64(i*960+k)/48000))
			} else {
				frame[k] = 0
			}
		}
		n, err := enc.EncodeTo(pkt, frame)
		if err != nil {
			return
		}
		_ = c.track.WriteSample(pmedia.Sample{Data: pkt[:n], Duration: 20 * time.Millisecond})
		if inTurn && i%80 == 29 {
			c.toneEnd.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
}

// close hangs up the way a page does: the PeerConnection closes (DTLS
// close_notify, the data channel goes away).
func (c *testClient) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.wg.Wait()
	_ = c.pc.Close()
	_ = c.mux.Close()
}

// leakCheck fails the test if goroutines started during it are still
// running shortly after it (pion's timers get a few seconds to stop).
func leakCheck(t *testing.T) func() {
	base := runtime.NumGoroutine()
	return func() {
		t.Helper()
		if t.Failed() {
			return
		}
		deadline := time.Now().Add(8 * time.Second)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutine leak: %d running, %d before\n%s", n, base, buf)
		}
	}
}

// ciRequires fails under CI=true and skips otherwise when a peer program
// is missing.
func ciRequires(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true", what)
	}
	t.Skipf("%s not installed; skipping", what)
}
