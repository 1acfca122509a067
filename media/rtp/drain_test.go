package rtp

import (
	"errors"
	"math"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/media/pace"
)

// frameLog is a Sink keeping the mean level of the settled part of each
// frame (past the resampler's delay).
type frameLog struct {
	mu     sync.Mutex
	levels []float64
	err    error
	calls  int
}

func (f *frameLog) WriteFrame(pcm []int16) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if len(pcm) != engineFrame {
		return ErrFrameSize
	}
	var sum float64
	for _, v := range pcm[100:] {
		sum += float64(v)
	}
	f.levels = append(f.levels, sum/float64(len(pcm)-100))
	return f.err
}

// manual returns a session on a pacer that never ticks by itself (the
// test calls tick and postTick), updated to exchange PCMU with a plain UDP
// socket, which it returns.
// loopbackTo is s's local address on 127.0.0.1, for a peer to send to.
func loopbackTo(s *Session) *net.UDPAddr {
	to := net.UDPAddrFromAddrPort(s.LocalAddr())
	to.IP = net.IPv4(127, 0, 0, 1)
	return to
}

func manual(t *testing.T, cfg Config) (*Session, *net.UDPConn) {
	t.Helper()
	pacer, err := pace.New(pace.Config{Period: time.Hour}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { pacer.Close() })
	s := newSession(t, cfg, pacer, newPorts(t))
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	require.NoError(t, s.Update(Params{Remote: peer.LocalAddr().(*net.UDPAddr).AddrPort(), Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}))
	return s, peer
}

// levelPacket is a PCMU packet whose 160 samples all sit at level.
func levelPacket(seq uint16, level int16) []byte {
	pcm := make([]int16, 160)
	for i := range pcm {
		pcm[i] = level
	}
	p := make([]byte, 160)
	g711.EncodeULawTo(p, pcm)
	return rtpPacket(0, seq, uint32(seq)*160, 0x5eed, p)
}

// TestDrainBurstInOrder: twelve packets that arrive between two ticks are
// all taken by the next tick's drain (more than one recvmmsg batch), in
// order, and then played one per tick, each at its own level.
func TestDrainBurstInOrder(t *testing.T) {
	s, peer := manual(t, Config{Jitter: jitterCfg(20, 400), MediaTimeout: -1})
	sink := &frameLog{}
	s.SetSink(sink)
	to := loopbackTo(s)
	const n = 12
	level := func(k int) float64 { return float64(1000 * (k + 1)) }
	for k := range n {
		_, err := peer.WriteToUDP(levelPacket(uint16(500+k), int16(level(k))), to)
		require.NoError(t, err)
	}
	time.Sleep(10 * time.Millisecond) // loopback delivery is synchronous; margin for a busy machine
	s.postTick(time.Now())
	m := s.Metrics()
	require.EqualValues(t, n, m.PacketsReceived.Load(), "one drain takes the whole burst")
	require.Zero(t, m.PacketsLost.Load())
	require.Zero(t, m.Duplicates.Load())

	for range 2 * n {
		time.Sleep(20 * time.Millisecond) // the playout keeps real time
		s.postTick(time.Now())
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	require.Equal(t, 2*n+1, sink.calls, "one frame per tick")
	// Each packet's level shows up, in sequence order.
	next := 0
	for _, v := range sink.levels {
		for k := next; k < n; k++ {
			if math.Abs(v-level(k)) < 0.05*level(k) {
				require.GreaterOrEqual(t, k, next, "levels in order: %v", sink.levels)
				next = k + 1
				break
			}
		}
	}
	require.GreaterOrEqual(t, next, n-1, "the burst was played in order: %v", sink.levels)
	require.Zero(t, m.Late.Load(), "no packet came too late for its frame")
}

// TestSinkAndReadFrameExclude: with a Sink, ReadFrame refuses; a Sink that
// fails is dropped after its first error, and ReadFrame works again.
func TestSinkAndReadFrameExclude(t *testing.T) {
	s, _ := manual(t, Config{MediaTimeout: -1})
	sink := &frameLog{err: errors.New("closed")}
	s.SetSink(sink)
	_, err := s.ReadFrame(t.Context(), make([]int16, 320))
	require.ErrorIs(t, err, ErrSinkSet)
	s.postTick(time.Now())
	s.postTick(time.Now())
	require.Equal(t, 1, sink.calls, "dropped after its error")
	require.Nil(t, s.sink.Load())
	s.postTick(time.Now())
	n, err := s.ReadFrame(t.Context(), make([]int16, 320))
	require.NoError(t, err)
	require.Equal(t, 320, n)
}

// TestDrainedReceptionLatency: on the real 20 ms clock, a DTMF digit is
// reported at most one period plus the pacer's worst lateness after its
// end packet left the peer (drained reception's added delay), and each
// tick's frame reaches the Sink.
func TestDrainedReceptionLatency(t *testing.T) {
	pacer := newPacer(t)
	s := newSession(t, Config{MediaTimeout: -1}, pacer, newPorts(t))
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	p := Params{Remote: peer.LocalAddr().(*net.UDPAddr).AddrPort(), Codec: codecPCMU, RecvPT: 0, DTMF: dtmf8k, RecvDTMFPT: dtmf8k.PT, Send: true, Receive: true}
	require.NoError(t, s.Update(p))
	sink := &frameLog{}
	s.SetSink(sink)
	got := make(chan time.Time, 16)
	s.OnDTMF(func(Digit) { got <- time.Now() })
	to := loopbackTo(s)

	var worst time.Duration
	for i := range 8 {
		// Start the press at a different phase of the tick each time.
		time.Sleep(time.Duration(3+5*i%17) * time.Millisecond)
		ts := uint32(1000 + 8000*i)
		start := rtpPacket(dtmf8k.PT, uint16(10*i), ts, 0xd7f, ev(byte(i), false, 160))
		start[1] |= 0x80 // marker
		_, err := peer.WriteToUDP(start, to)
		require.NoError(t, err)
		sent := time.Now()
		_, err = peer.WriteToUDP(rtpPacket(dtmf8k.PT, uint16(10*i+1), ts, 0xd7f, ev(byte(i), true, 800)), to)
		require.NoError(t, err)
		select {
		case at := <-got:
			worst = max(worst, at.Sub(sent))
		case <-time.After(2 * time.Second):
			t.Fatalf("digit %d not reported", i)
		}
	}
	bound := pacer.Period() + pacer.Stats().LateMax + 5*time.Millisecond
	t.Logf("worst delay from the end packet to OnDTMF %v (bound %v)", worst, bound)
	require.LessOrEqual(t, worst, bound)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	require.GreaterOrEqual(t, sink.calls, 5, "frames reached the sink on the pacer")
}

// decodedLog is a DecodedSink keeping every frame both ways.
type decodedLog struct {
	pcm, decoded [][]int16
}

func (d *decodedLog) WriteFrame([]int16) error {
	return errors.New("WriteFrame called on a DecodedSink")
}

func (d *decodedLog) WriteFrameFrom(pcm, decoded []int16) error {
	d.pcm = append(d.pcm, append([]int16(nil), pcm...))
	d.decoded = append(d.decoded, append([]int16(nil), decoded...))
	return nil
}

// TestDecodedSink: a DecodedSink gets WriteFrameFrom instead of
// WriteFrame, with each frame also as decoded at PCMU's 8 kHz: the
// packets' own samples, beside their 16 kHz version.
func TestDecodedSink(t *testing.T) {
	s, peer := manual(t, Config{Jitter: jitterCfg(20, 400), MediaTimeout: -1})
	sink := &decodedLog{}
	s.SetSink(sink)
	to := loopbackTo(s)
	for k := range 3 {
		_, err := peer.WriteToUDP(levelPacket(uint16(700+k), 3000), to)
		require.NoError(t, err)
	}
	time.Sleep(10 * time.Millisecond)
	s.postTick(time.Now())
	for range 4 {
		time.Sleep(20 * time.Millisecond)
		s.postTick(time.Now())
	}
	require.Len(t, sink.decoded, 5, "one frame per tick, through WriteFrameFrom")
	want := make([]int16, 160)
	g711.DecodeULawTo(want, levelPacket(700, 3000)[12:])
	played := 0
	for i, d := range sink.decoded {
		require.Len(t, d, 160, "20 ms at 8 kHz")
		require.Len(t, sink.pcm[i], engineFrame)
		if slices.Equal(d, want) { // a packet's samples as decoded
			require.InDelta(t, float64(want[0]), float64(sink.pcm[i][200]), 0.05*3000, "the same level at 16 kHz")
			played++
		}
	}
	require.GreaterOrEqual(t, played, 2, "the packets were played as decoded: %v", sink.decoded)
}
