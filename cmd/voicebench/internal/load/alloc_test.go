package load

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
	"github.com/voiced/voiced/cmd/voicebench/internal/udp"
)

func testSource(t testing.TB) *audio.Source {
	pcm, rate, err := audio.DefaultPrompt()
	require.NoError(t, err)
	s, err := audio.NewSource(pcm, rate, time.Second)
	require.NoError(t, err)
	return s
}

// senderWithCalls builds a sender over one lane with n calls sending to
// a sink socket.
func senderWithCalls(t testing.TB, n int) (*sender, *udp.Conn, func()) {
	src := testSource(t)
	frames, err := src.Frames("PCMU")
	require.NoError(t, err)
	l, err := openLane(netip.MustParseAddr("127.0.0.1"), 8<<20)
	require.NoError(t, err)
	sink, err := udp.Listen(netip.MustParseAddrPort("127.0.0.1:0"), 8<<20)
	require.NoError(t, err)
	f, off := src.Onset(8000)
	s := newSender([]*lane{l}, 1, f, time.Duration(off)*time.Second/8000)
	var calls []*call
	for i := range n {
		c := &call{index: i, ssrc: uint32(i), codec: sdp.PCMU, frames: frames, pkt: make([]byte, 12+160), dest: sink.LocalAddr()}
		c.hdr.Version, c.hdr.SSRC = 2, c.ssrc
		calls = append(calls, c)
	}
	s.calls.Store(&calls)
	return s, sink, func() { l.close(); sink.Close() }
}

func TestSenderTickAllocatesNothing(t *testing.T) {
	s, sink, done := senderWithCalls(t, 50)
	defer done()
	drain := make([]udp.Message, 64)
	for i := range drain {
		drain[i].Buf = make([]byte, 1500)
	}
	allocs := testing.AllocsPerRun(200, func() {
		s.Tick(time.Now())
		for got := 0; got < 50; {
			n, err := sink.ReadBatch(drain)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	require.Zero(t, allocs)
	// 201 ticks (one warm-up) of 50 calls, every onset frame included.
	require.Equal(t, uint64(201*50), s.sent.Load())
}

func TestSenderPackets(t *testing.T) {
	s, sink, done := senderWithCalls(t, 3)
	defer done()
	calls := *s.calls.Load()
	for _, c := range calls {
		c.seq, c.ts = 65535, 1000
	}
	s.Tick(time.Now())
	s.Tick(time.Now())
	in := make([]udp.Message, 8)
	for i := range in {
		in[i].Buf = make([]byte, 1500)
	}
	got := 0
	for got < 6 {
		n, err := sink.ReadBatch(in[got:])
		require.NoError(t, err)
		got += n
	}
	for i, m := range in[:6] {
		b := m.Buf[:m.N]
		require.Len(t, b, 172)
		require.Equal(t, byte(0x80), b[0])
		first := i < 3
		require.Equal(t, first, b[1]&0x80 != 0, "marker on the first packet only")
		require.Equal(t, byte(0), b[1]&0x7f)
		seq := uint16(b[2])<<8 | uint16(b[3])
		ts := uint32(b[4])<<24 | uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7])
		if first {
			require.Equal(t, uint16(65535), seq)
			require.Equal(t, uint32(1000), ts)
		} else {
			require.Equal(t, uint16(0), seq, "wraps")
			require.Equal(t, uint32(1160), ts)
		}
	}
}

func TestReceiveAllocatesNothing(t *testing.T) {
	c := &call{}
	c.rx.codec = sdp.PCMU
	c.rx.stream.Reset(8000)
	c.rx.onset = audio.NewOnset(8000)
	c.rx.pcm = make([]int16, 960)
	quiet := make([]byte, 160)
	for i := range quiet {
		quiet[i] = 0xff // µ-law zero
	}
	i := 0
	allocs := testing.AllocsPerRun(500, func() {
		c.receive(0, uint16(i), uint32(160*i), 7, quiet, int64(i)*20e6)
		i++
	})
	require.Zero(t, allocs)
	require.Equal(t, uint64(501), c.rx.stream.Summary().Received)
}

func BenchmarkSenderTick1000(b *testing.B) {
	s, sink, done := senderWithCalls(b, 1000)
	defer done()
	drain := make([]udp.Message, 256)
	for i := range drain {
		drain[i].Buf = make([]byte, 1500)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Tick(time.Now())
		for got := 0; got < 1000; {
			n, _ := sink.ReadBatch(drain)
			got += n
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/packet")
}
