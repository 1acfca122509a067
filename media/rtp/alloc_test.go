package rtp

import (
	"net"
	"net/netip"
	"testing"
	"time"

	prtp "github.com/pion/rtp"
	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
	"github.com/voiced/voiced/media/pace"
)

// tableSource is a Source that costs nothing: it copies a precomputed
// frame, so benchmarks measure the session, not the generator.
type tableSource struct{ frame []int16 }

func (s tableSource) ReadFrame(dst []int16) bool {
	copy(dst, s.frame)
	return true
}

func newTableSource(rate int) tableSource {
	g := &tone{hz: 440, amp: 6000, rate: rate}
	f := make([]int16, rate/50)
	g.ReadFrame(f)
	return tableSource{f}
}

// rig is a session on an idle pacer (its clock never ticks on its own, so
// nothing else runs while allocations are counted) with a fake peer whose
// packets are handed straight to the receive path.
type rig struct {
	s     *Session
	sink  *net.UDPConn
	from  netip.AddrPort
	pkt   prtp.Packet
	dig   digitBatch
	pkts  [][]byte
	i     int
	frame []int16
	now   time.Time
}

func newRig(t testing.TB, c Codec, cfg Config) *rig {
	t.Helper()
	pacer, err := pace.New(pace.Config{Period: time.Hour}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { pacer.Close() })
	cfg.Local = localhost
	s, err := NewSession(cfg, quiet, pacer, newPorts(t))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { sink.Close() })
	r := &rig{s: s, sink: sink, from: sink.LocalAddr().(*net.UDPAddr).AddrPort(), frame: make([]int16, 320), now: time.Now()}
	require.NoError(t, s.Update(Params{Remote: r.from, Codec: c, RecvPT: c.PT, Send: true, Receive: true}))
	// 1 s of the peer's audio as RTP packets.
	step := uint32(c.ClockRate / 50)
	switch {
	case c.is(NameOpus):
		enc, err := opus.NewEncoder(opus.EncoderConfig{FEC: true})
		require.NoError(t, err)
		g := &tone{hz: 300, amp: 5000, rate: 48000}
		pcm := make([]int16, 960)
		for i := range 50 {
			g.ReadFrame(pcm)
			buf := make([]byte, opus.MaxPacketSize)
			n, err := enc.EncodeTo(buf, pcm)
			require.NoError(t, err)
			r.pkts = append(r.pkts, rtpPacket(c.PT, uint16(i), uint32(i)*step, 0xabcdef, buf[:n]))
		}
	default:
		g := &tone{hz: 300, amp: 5000, rate: 8000}
		pcm := make([]int16, 160)
		for i := range 50 {
			g.ReadFrame(pcm)
			p := make([]byte, 160)
			g711.EncodeULawTo(p, pcm)
			r.pkts = append(r.pkts, rtpPacket(c.PT, uint16(i), uint32(i)*step, 0xabcdef, p))
		}
	}
	for range 200 {
		r.receive() // latch, warm up the buffers and the resampler
	}
	return r
}

// receive delivers the peer's next packet (rewriting its sequence number
// and timestamp to continue the stream) and reads one 16 kHz frame: the
// whole receive path after the socket.
func (r *rig) receive() {
	p := r.pkts[r.i%len(r.pkts)]
	seq := uint16(r.i)
	ts := uint32(r.i) * uint32(r.s.params.Codec.ClockRate/50)
	p[2], p[3] = byte(seq>>8), byte(seq)
	p[4], p[5], p[6], p[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
	r.i++
	r.now = r.now.Add(20 * time.Millisecond)
	r.s.handle(p, r.from, r.now, false, &r.pkt, &r.dig)
	if _, _, err := r.s.readFrame(r.frame, EngineRate, r.now.Add(5*time.Millisecond)); err != nil {
		panic(err)
	}
}

// send runs one pacer tick of the session: pull, resample, encode, send.
func (r *rig) send() {
	r.now = r.now.Add(20 * time.Millisecond)
	r.s.tick(r.now)
}

func TestReceivePathDoesNotAllocate(t *testing.T) {
	for _, c := range []Codec{codecPCMU, codecOpus} {
		t.Run(c.Name, func(t *testing.T) {
			r := newRig(t, c, Config{})
			require.Zero(t, testing.AllocsPerRun(500, r.receive))
			m := r.s.Metrics()
			require.GreaterOrEqual(t, m.PacketsReceived.Load(), uint64(700))
			require.Zero(t, m.PacketsLost.Load())
			require.Greater(t, rms(r.frame), 1000.0, "audio came out")
		})
	}
}

func TestSendPathDoesNotAllocate(t *testing.T) {
	for _, c := range []Codec{codecPCMU, codecOpus} {
		t.Run(c.Name+"/source", func(t *testing.T) {
			// RTCP every tick, so its path is measured too.
			r := newRig(t, c, Config{RTCPInterval: time.Microsecond})
			require.NoError(t, r.s.SetSource(newTableSource(16000), 16000))
			// Warm up past every scratch buffer's growth (one full CI run
			// on a loaded machine counted an allocation after 10).
			for range 100 {
				r.send()
			}
			before := r.s.Metrics().PacketsSent.Load()
			require.Zero(t, testing.AllocsPerRun(500, r.send))
			require.Equal(t, before+501, r.s.Metrics().PacketsSent.Load())
			require.Zero(t, r.s.Metrics().Underflows.Load())
		})
		t.Run(c.Name+"/queue", func(t *testing.T) {
			r := newRig(t, c, Config{})
			frame := newTableSource(16000).frame
			write := func() {
				if err := r.s.WriteFrame(frame); err != nil {
					panic(err)
				}
				r.send()
			}
			for range 10 {
				write()
			}
			require.Zero(t, testing.AllocsPerRun(500, write))
			require.Zero(t, r.s.Metrics().Underflows.Load())
		})
	}
}

// BenchmarkRTPReceivePCMU is one packet through the receive path after
// the socket: latch check, header parse, RFC 3550 statistics, jitter
// buffer, G.711 decode and 8 -> 16 kHz resampling.
func BenchmarkRTPReceivePCMU(b *testing.B) { benchReceive(b, codecPCMU) }

// BenchmarkRTPReceiveOpus is the same with Opus decoded straight to 16 kHz.
func BenchmarkRTPReceiveOpus(b *testing.B) { benchReceive(b, codecOpus) }

func benchReceive(b *testing.B, c Codec) {
	r := newRig(b, c, Config{})
	b.ReportAllocs()
	for b.Loop() {
		r.receive()
	}
}

// BenchmarkRTPSendPCMU is one pacer tick of a session pulling 16 kHz audio
// from a Source: resample to 8 kHz, G.711 encode, header, sendto.
func BenchmarkRTPSendPCMU(b *testing.B) { benchSend(b, codecPCMU) }

// BenchmarkRTPSendOpus is the same with an Opus encode at 16 kHz.
func BenchmarkRTPSendOpus(b *testing.B) { benchSend(b, codecOpus) }

func benchSend(b *testing.B, c Codec) {
	r := newRig(b, c, Config{})
	if err := r.s.SetSource(newTableSource(16000), 16000); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.send()
	}
}

// BenchmarkRTPSendQueued is a tick sending a frame WriteFrame encoded
// earlier (on the writer's goroutine): the pacer's share in push mode.
func BenchmarkRTPSendQueued(b *testing.B) {
	r := newRig(b, codecPCMU, Config{})
	frame := newTableSource(16000).frame
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := r.s.WriteFrame(frame); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r.send()
	}
}
