package rtp

import (
	"net"
	"syscall"
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

// BenchmarkPacer1000SessionsDuplex is 500 pairs of PCMU sessions talking
// to each other on one pacer worker: each of the 1000 sends a packet per
// tick (Source, resample, encode) and drains the one its partner sent
// into the jitter buffer, decodes, resamples and hands the frame to a
// Sink, the whole per-tick media path of a call without an engine. Besides
// the tick timing it reports the process's CPU time per tick and per
// packet (rusage: user plus system, so the send and receive system calls
// count), the figure that does not depend on how loaded the machine is.
func BenchmarkPacer1000SessionsDuplex(b *testing.B) { benchDuplex(b, nil, false) }

// BenchmarkPacer1000SessionsDuplexBatch is the same with the node's send
// batch (NewPacerWorker): each tick's 1000 packets leave through one
// io_uring batch (four submissions of up to batchSlots) instead of 1000
// sendto calls; each session still reads its own socket with recvmmsg.
// Compare its cpu-µs/packet with the plain run's.
func BenchmarkPacer1000SessionsDuplexBatch(b *testing.B) { benchDuplex(b, NewPacerWorker, false) }

// BenchmarkPacer1000SessionsDuplexBatchNoPrefetch is the Batch run without
// the pacer's prefetching (pace.Config.NoPrefetch): compare their
// cpu-µs/packet.
func BenchmarkPacer1000SessionsDuplexBatchNoPrefetch(b *testing.B) {
	benchDuplex(b, NewPacerWorker, true)
}

func benchDuplex(b *testing.B, worker func(int) pace.Worker, noPrefetch bool) {
	pacer, err := pace.New(pace.Config{Workers: 1, NewWorker: worker, NoPrefetch: noPrefetch}, nil)
	require.NoError(b, err)
	defer pacer.Close()
	ports := newPorts(b)
	src := newTableSource(16000)
	sink := &nopSink{}
	for range 500 {
		var pair [2]*Session
		for i := range pair {
			s, err := NewSession(Config{Local: localhost, RTCPMux: true, MediaTimeout: -1}, quiet, pacer, ports)
			require.NoError(b, err)
			defer s.Close()
			pair[i] = s
		}
		for i, s := range pair {
			peer := pair[1-i]
			p := Params{Remote: peer.LocalAddr(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}
			require.NoError(b, s.Update(p))
			require.NoError(b, s.SetSource(src, 16000))
			s.SetSink(sink)
		}
	}
	runPacer(b, pacer, 1000)
}

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
	runPacer(b, pacer, 1000)
}

// runPacer waits for one tick per iteration and reports the pacer's tick
// cost and lateness, and the process's CPU time per tick and per packet
// sent (packets per tick: one per session).
func runPacer(b *testing.B, pacer *pace.Pacer, packets int) {
	time.Sleep(200 * time.Millisecond)
	start := pacer.Stats().Ticks
	first := start
	cpu0 := cpuTime()
	for b.Loop() {
		for pacer.Stats().Ticks == start {
			time.Sleep(time.Millisecond)
		}
		start = pacer.Stats().Ticks
	}
	cpu := cpuTime() - cpu0
	st := pacer.Stats()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(st.CostP50), "cost-p50-µs")
	b.ReportMetric(us(st.CostP99), "cost-p99-µs")
	b.ReportMetric(us(st.LateP50), "late-p50-µs")
	b.ReportMetric(us(st.LateP99), "late-p99-µs")
	b.ReportMetric(us(st.LateMax), "late-max-µs")
	b.ReportMetric(float64(st.Skipped), "skipped")
	if ticks := st.Ticks - first; ticks > 0 {
		b.ReportMetric(us(cpu)/float64(ticks), "cpu-µs/tick")
		b.ReportMetric(us(cpu)/float64(ticks)/float64(packets), "cpu-µs/packet")
	}
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
