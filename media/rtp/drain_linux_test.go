package rtp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDrainKeepsArrivalTime: a packet drained 40 ms after it arrived is
// accounted at its kernel arrival time (SO_TIMESTAMPNS), not at the
// drain's: the jitter statistics and the buffer see the network's timing,
// not the ticks'.
func TestDrainKeepsArrivalTime(t *testing.T) {
	s, peer := manual(t, Config{MediaTimeout: -1})
	to := loopbackTo(s)
	// The kernel turns receive timestamps on for the whole machine a
	// moment after the first socket asks (a deferred static key), and
	// stamps a packet that came before that at the read: warm up.
	_, err := peer.WriteToUDP(levelPacket(1, 1000), to)
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond)
	s.drain(time.Now())
	// lastRecv, where the arrival shows, keeps a stamp younger than
	// recvTouchEvery: the next packet comes later than that.
	time.Sleep(recvTouchEvery)
	sent := time.Now()
	_, err = peer.WriteToUDP(levelPacket(2, 1000), to)
	require.NoError(t, err)
	time.Sleep(40 * time.Millisecond)
	now := time.Now()
	s.drain(now)
	require.EqualValues(t, 2, s.Metrics().PacketsReceived.Load())
	at := time.Unix(0, s.lastRecv.Load())
	require.Less(t, at.Sub(sent).Abs(), 5*time.Millisecond, "arrival %v after sending, drained %v after", at.Sub(sent), now.Sub(sent))
}

// TestDrainDoesNotAllocate: the whole tick-driven receive path through
// the socket (recvmmsg, parse, jitter buffer, decode, resample, Sink)
// allocates nothing in the steady state.
func TestDrainDoesNotAllocate(t *testing.T) {
	s, peer := manual(t, Config{MediaTimeout: -1})
	s.SetSink(&nopSink{})
	to := loopbackTo(s)
	pkt := levelPacket(0, 3000)
	seq := uint16(0)
	step := func() {
		seq++
		ts := uint32(seq) * 160
		pkt[2], pkt[3] = byte(seq>>8), byte(seq)
		pkt[4], pkt[5], pkt[6], pkt[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
		if _, err := peer.WriteToUDP(pkt, to); err != nil {
			panic(err)
		}
		s.postTick(time.Now())
	}
	for range 100 {
		step()
	}
	require.Zero(t, testing.AllocsPerRun(300, step))
	require.GreaterOrEqual(t, s.Metrics().PacketsReceived.Load(), uint64(400))
}

type nopSink struct{ n int }

func (k *nopSink) WriteFrame([]int16) error { k.n++; return nil }
