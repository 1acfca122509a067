package pace

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// udpStream is a Tick shaped like an RTP sender's: write one 172-byte
// packet (a 20 ms G.711 payload and its 12-byte header) to its own socket.
type udpStream struct {
	conn *net.UDPConn
	to   netip.AddrPort
	pkt  [172]byte
	seq  uint16
}

func (s *udpStream) Tick(time.Time) {
	s.seq++
	s.pkt[2], s.pkt[3] = byte(s.seq>>8), byte(s.seq)
	_, _ = s.conn.WriteToUDPAddrPort(s.pkt[:], s.to)
}

func udpStreams(b *testing.B, n int) []*udpStream {
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(b, err)
	b.Cleanup(func() { sink.Close() })
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	streams := make([]*udpStream, n)
	for i := range streams {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(b, err)
		b.Cleanup(func() { c.Close() })
		streams[i] = &udpStream{conn: c, to: to}
	}
	return streams
}

// BenchmarkTick1000 is the loop overhead alone: one tick over 1000 streams
// whose Tick does almost nothing.
func BenchmarkTick1000(b *testing.B) {
	p, err := New(Config{Period: time.Hour}, nil)
	require.NoError(b, err)
	defer p.Close()
	streams := make([]nop, 1000)
	for i := range streams {
		_, err := p.Register(&streams[i])
		require.NoError(b, err)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		p.tick(at(now))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/stream")
}

// BenchmarkTick1000UDP is one tick over 1000 streams that each send a
// G.711-sized packet on their own loopback socket: the real per-tick cost
// on the pacer goroutine.
func BenchmarkTick1000UDP(b *testing.B) {
	p, err := New(Config{Period: time.Hour}, nil)
	require.NoError(b, err)
	defer p.Close()
	for _, s := range udpStreams(b, 1000) {
		_, err := p.Register(s)
		require.NoError(b, err)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		p.tick(at(now))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/stream")
}

// BenchmarkPacer1000UDP runs the real 20 ms clock with 1000 UDP streams;
// each iteration waits for one tick. It reports how late ticks started
// (p50, p99, max) and how long one tick's loop took, in µs.
func BenchmarkPacer1000UDP(b *testing.B) { benchPacerUDP(b, 1) }

// BenchmarkPacer1000UDP2Workers is the same spread over two workers.
func BenchmarkPacer1000UDP2Workers(b *testing.B) { benchPacerUDP(b, 2) }

func benchPacerUDP(b *testing.B, workers int) {
	p, err := New(Config{Workers: workers}, nil)
	require.NoError(b, err)
	defer p.Close()
	for _, s := range udpStreams(b, 1000) {
		_, err := p.Register(s)
		require.NoError(b, err)
	}
	start := p.Stats().Ticks
	for b.Loop() {
		for p.Stats().Ticks == start {
			time.Sleep(time.Millisecond)
		}
		start = p.Stats().Ticks
	}
	st := p.Stats()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(st.LateP50), "late-p50-µs")
	b.ReportMetric(us(st.LateP99), "late-p99-µs")
	b.ReportMetric(us(st.LateMax), "late-max-µs")
	b.ReportMetric(us(st.CostP99), "cost-p99-µs")
	b.ReportMetric(float64(st.Skipped), "skipped")
}

// BenchmarkPacerIdle is the clock alone, no streams: the timer's own
// lateness on this machine, the floor under BenchmarkPacer1000UDP.
func BenchmarkPacerIdle(b *testing.B) {
	p, err := New(Config{}, nil)
	require.NoError(b, err)
	defer p.Close()
	start := p.Stats().Ticks
	for b.Loop() {
		for p.Stats().Ticks == start {
			time.Sleep(time.Millisecond)
		}
		start = p.Stats().Ticks
	}
	st := p.Stats()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(st.LateP50), "late-p50-µs")
	b.ReportMetric(us(st.LateP99), "late-p99-µs")
	b.ReportMetric(us(st.LateMax), "late-max-µs")
}
