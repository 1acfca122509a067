package rtp

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media/pace"
)

// BenchmarkPacer1000Sessions runs the node pacer's real 20 ms clock over
// 1000 PCMU sessions, each pulling 16 kHz audio from a Source, resampling,
// encoding and sending one packet per tick to a loopback sink; each
// iteration waits for one tick. It reports the per-tick loop cost (p50,
// p99) and how late ticks started (p50, p99, max): the outbound pacing
// jitter of a node carrying 1000 calls.
func BenchmarkPacer1000Sessions(b *testing.B) { benchSessions(b, 1) }

// BenchmarkPacer1000Sessions2Workers is the same with the pacer's streams
// spread over two worker goroutines.
func BenchmarkPacer1000Sessions2Workers(b *testing.B) { benchSessions(b, 2) }

func benchSessions(b *testing.B, workers int) {
	pacer, err := pace.New(pace.Config{Workers: workers}, nil)
	require.NoError(b, err)
	defer pacer.Close()
	ports := newPorts(b)
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(b, err)
	defer sink.Close()
	src := newTableSource(16000)
	p := Params{Remote: sink.LocalAddr().(*net.UDPAddr).AddrPort(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}
	for range 1000 {
		s, err := NewSession(Config{Local: localhost, RTCPMux: true, MediaTimeout: -1}, quiet, pacer, ports)
		require.NoError(b, err)
		defer s.Close()
		require.NoError(b, s.Update(p))
		require.NoError(b, s.SetSource(src, 16000))
	}
	time.Sleep(200 * time.Millisecond)
	start := pacer.Stats().Ticks
	for b.Loop() {
		for pacer.Stats().Ticks == start {
			time.Sleep(time.Millisecond)
		}
		start = pacer.Stats().Ticks
	}
	st := pacer.Stats()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(st.CostP50), "cost-p50-µs")
	b.ReportMetric(us(st.CostP99), "cost-p99-µs")
	b.ReportMetric(us(st.LateP50), "late-p50-µs")
	b.ReportMetric(us(st.LateP99), "late-p99-µs")
	b.ReportMetric(us(st.LateMax), "late-max-µs")
	b.ReportMetric(float64(st.Skipped), "skipped")
}
