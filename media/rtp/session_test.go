package rtp

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoopback sends a tone each way between two sessions for every codec
// and checks what arrives: the tone, at the engine rate, with no loss.
func TestLoopback(t *testing.T) {
	for _, c := range []Codec{codecPCMU, codecPCMA, codecOpus} {
		t.Run(c.Name, func(t *testing.T) {
			a, b := pair(t, slack, c, Codec{})
			require.NoError(t, a.SetSource(&tone{hz: 450, amp: 8000, rate: 16000}, 16000))
			require.NoError(t, b.SetSource(&tone{hz: 1000, amp: 8000, rate: 16000}, 16000))
			var wg sync.WaitGroup
			var atB, atA []int16
			wg.Go(func() { atB = collect(t, b, 1200*time.Millisecond) })
			wg.Go(func() { atA = collect(t, a, 1200*time.Millisecond) })
			wg.Wait()
			tail := func(x []int16) []int16 { return x[len(x)-8000:] } // the last 0.5 s
			require.Greater(t, toneFrames(tail(atB), 450), 0.8, "b hears a's 450 Hz")
			require.Greater(t, toneFrames(tail(atA), 1000), 0.8, "a hears b's 1 kHz")
			require.InDelta(t, 8000/1.4142, rms(tail(atB)), 8000*0.1)
			for _, s := range []*Session{a, b} {
				snap := s.Snapshot()
				require.Greater(t, snap.PacketsReceived, uint64(40))
				require.Zero(t, snap.PacketsLost)
				require.Zero(t, snap.SourceDrops)
				require.Zero(t, snap.Malformed)
				require.Greater(t, snap.MOS, 4.0, "%+v", snap)
				require.Equal(t, c.Name, snap.Codec)
			}
		})
	}
}

// TestWriteFrameQueue sends with WriteFrame instead of a Source: frames
// queue up to QueueFrames, are paced out one per tick, and Flush drops
// what is waiting.
func TestWriteFrameQueue(t *testing.T) {
	a, b := pair(t, Config{QueueFrames: 10, Jitter: slack.Jitter}, codecPCMU, Codec{})
	g := &tone{hz: 600, amp: 6000, rate: 16000}
	frame := make([]int16, 320)
	for range 10 {
		g.ReadFrame(frame)
		require.NoError(t, a.WriteFrame(frame))
	}
	require.ErrorIs(t, a.WriteFrame(frame), ErrQueueFull)
	require.ErrorIs(t, a.WriteFrame(frame[:100]), ErrFrameSize)
	require.Eventually(t, func() bool { return a.Queued() == 0 }, time.Second, 5*time.Millisecond, "paced out")

	// Keep the queue fed for a second and listen.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 60; {
			g.ReadFrame(frame)
			if a.WriteFrame(frame) == nil {
				i++
				continue
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	got := collect(t, b, 1000*time.Millisecond)
	<-done
	require.Greater(t, toneFrames(got[len(got)-6400:len(got)-1600], 600), 0.8)

	require.Eventually(t, func() bool { return a.Queued() == 0 }, time.Second, 5*time.Millisecond)
	for range 10 {
		require.NoError(t, a.WriteFrame(frame))
	}
	// Without Flush the next 200 ms would carry these frames; with it
	// every tick sends silence at once.
	under := a.Metrics().Underflows.Load()
	a.Flush()
	time.Sleep(110 * time.Millisecond)
	require.Zero(t, a.Queued())
	require.GreaterOrEqual(t, a.Metrics().Underflows.Load()-under, uint64(4), "flushed frames are not sent")

	require.NoError(t, a.SetSource(&tone{rate: 16000}, 16000))
	require.ErrorIs(t, a.WriteFrame(frame), ErrSourceSet)
}

// TestLatchingIsStrict: the first valid source is latched; later packets
// from anyone else are dropped and counted, and our packets follow the
// latched source rather than the SDP address.
func TestLatchingIsStrict(t *testing.T) {
	pacer, ports := newPacer(t), newPorts(t)
	b := newSession(t, Config{}, pacer, ports)
	// The SDP claims a port nobody listens on; the real peer is behind a
	// "NAT" (a socket of its own).
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	rogue, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer rogue.Close()
	require.NoError(t, b.Update(Params{Remote: netip.MustParseAddrPort("127.0.0.1:9"), Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}))

	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(localhost, b.LocalAddr().Port()))
	pkt := rtpPacket(0, 1, 160, 0x1234, make([]byte, 160))
	// A packet with an unnegotiated payload type latches nothing.
	_, err = rogue.WriteTo(rtpPacket(96, 1, 160, 0x99, make([]byte, 20)), to)
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	_, err = peer.WriteTo(pkt, to)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.Metrics().PacketsReceived.Load() == 1 }, time.Second, time.Millisecond)
	for i := range 5 {
		_, err = rogue.WriteTo(rtpPacket(0, uint16(2+i), uint32(320+160*i), 0x1234, make([]byte, 160)), to)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return b.Metrics().SourceDrops.Load() == 5 }, time.Second, time.Millisecond)
	require.EqualValues(t, 1, b.Metrics().PacketsReceived.Load())
	require.EqualValues(t, 1, b.Metrics().Malformed.Load(), "the unnegotiated payload type")

	// b's packets go to the latched peer, not to the SDP address.
	peer.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 1500)
	n, _, err := peer.ReadFrom(buf)
	require.NoError(t, err)
	require.Equal(t, 172, n)
	rogue.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, _, err = rogue.ReadFrom(buf)
	require.Error(t, err, "the rogue hears nothing")

	// A re-INVITE with a new remote releases the latch.
	require.NoError(t, b.Update(Params{Remote: netip.MustParseAddrPort("127.0.0.1:11"), Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}))
	_, err = rogue.WriteTo(rtpPacket(0, 50, 8000, 0x777, make([]byte, 160)), to)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.Metrics().PacketsReceived.Load() == 2 }, time.Second, time.Millisecond)
}

// rtpPacket builds an RTP packet by hand.
func rtpPacket(pt uint8, seq uint16, ts, ssrc uint32, payload []byte) []byte {
	b := make([]byte, 12+len(payload))
	b[0] = 0x80
	b[1] = pt
	b[2], b[3] = byte(seq>>8), byte(seq)
	b[4], b[5], b[6], b[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
	b[8], b[9], b[10], b[11] = byte(ssrc>>24), byte(ssrc>>16), byte(ssrc>>8), byte(ssrc)
	copy(b[12:], payload)
	return b
}

func TestMediaTimeout(t *testing.T) {
	a, b := pair(t, Config{MediaTimeout: 300 * time.Millisecond}, codecPCMU, Codec{})
	require.NoError(t, a.SetSource(&tone{hz: 300, amp: 3000, rate: 16000}, 16000))
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, b.Err(), "media flows: no timeout")
	select {
	case <-b.Done():
		t.Fatal("done while media flows")
	default:
	}
	// a goes on hold for b: it stops sending, and b must not time out while
	// it knows the peer sends nothing.
	pa := params(b, codecPCMU, Codec{})
	pa.Send = false
	require.NoError(t, a.Update(pa))
	pb := params(a, codecPCMU, Codec{})
	pb.Receive = false
	require.NoError(t, b.Update(pb))
	time.Sleep(600 * time.Millisecond)
	require.NoError(t, b.Err(), "no timeout on hold")
	// b expects media again but a stays silent: timeout.
	pb.Receive = true
	start := time.Now()
	require.NoError(t, b.Update(pb))
	select {
	case <-b.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("no media timeout")
	}
	// 300 ms and lastRecv's allowance for a stale stamp (recvTouchEvery),
	// detected at the next tick; a loaded machine may add a little.
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 300*time.Millisecond+recvTouchEvery)
	require.Less(t, took, 600*time.Millisecond)
	require.ErrorIs(t, b.Err(), ErrMediaTimeout)
}

func TestUpdateValidates(t *testing.T) {
	pacer, ports := newPacer(t), newPorts(t)
	s := newSession(t, Config{}, pacer, ports)
	remote := netip.MustParseAddrPort("127.0.0.1:5004")
	for name, p := range map[string]Params{
		"g729":       {Remote: remote, Codec: Codec{PT: 18, Name: "G729", ClockRate: 8000}},
		"pcmu at 16": {Remote: remote, Codec: Codec{PT: 0, Name: "PCMU", ClockRate: 16000}},
		"no remote":  {Codec: codecPCMU},
		"bad dtmf":   {Remote: remote, Codec: codecPCMU, DTMF: Codec{PT: 101, Name: "foo", ClockRate: 8000}},
	} {
		t.Run(name, func(t *testing.T) { require.Error(t, s.Update(p)) })
	}
	require.ErrorIs(t, s.Update(Params{Remote: remote, Codec: Codec{PT: 18, Name: "G729", ClockRate: 8000}}), ErrUnsupportedCodec)
	require.ErrorIs(t, s.SendDTMF("1", 0), ErrNoDTMF)
	require.NoError(t, s.Update(Params{Remote: remote, Codec: codecPCMU, DTMF: dtmf8k, RecvDTMFPT: 101}))
	require.ErrorIs(t, s.SendDTMF("1x", 0), ErrBadDigit)
	require.ErrorIs(t, s.SetSource(&tone{}, 11025), ErrFrameSize)
	_, err := s.ReadFrame(context.Background(), make([]int16, 100))
	require.ErrorIs(t, err, ErrFrameSize)
}

func TestConfigAndPorts(t *testing.T) {
	_, err := NewPorts(100, 200)
	require.ErrorIs(t, err, ErrBadConfig)
	_, err = NewPorts(40000, 40000)
	require.ErrorIs(t, err, ErrBadConfig)
	p, err := NewPorts(40001, 40010)
	require.NoError(t, err)
	lo, hi := p.Range()
	require.Equal(t, 40002, lo)
	require.Equal(t, 40010, hi)
	for name, cfg := range map[string]Config{
		"queue":  {QueueFrames: 1000},
		"cn":     {CNLevel: 200},
		"jitter": {Jitter: jitterCfg(90, 80)},
		"rtcp":   {RTCPInterval: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewSession(cfg, nil, newPacer(t), p)
			require.Error(t, err)
		})
	}
	_, err = NewSession(Config{}, nil, nil, p)
	require.ErrorIs(t, err, ErrBadConfig)
}

// TestPortsRotateAndRunOut: ports are taken in even/odd pairs, in rotation,
// and a full range reports ErrNoPorts.
func TestPortsRotateAndRunOut(t *testing.T) {
	pacer := newPacer(t)
	// Below the kernel's ephemeral range (32768+ on Linux), so no socket
	// of another program lands there by chance.
	ports, err := NewPorts(28900, 28905) // three pairs
	require.NoError(t, err)
	var got []int
	for range 3 {
		s := newSession(t, Config{}, pacer, ports)
		got = append(got, int(s.LocalAddr().Port()))
	}
	require.Equal(t, []int{28900, 28902, 28904}, got)
	_, err = NewSession(Config{Local: localhost}, nil, pacer, ports)
	require.ErrorIs(t, err, ErrNoPorts)
	// With mux only the even port is taken.
	mux, err := NewPorts(28910, 28911)
	require.NoError(t, err)
	s := newSession(t, Config{RTCPMux: true}, pacer, mux)
	require.EqualValues(t, 28910, s.LocalAddr().Port())
	require.Nil(t, s.rconn)
}

// TestNoGoroutineLeak runs whole sessions, with and without RTCP
// multiplexing, and checks every goroutine they started is gone after
// Close (the pacer's own included once it is closed).
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		pacer, ports := newPacerRaw(t), newPorts(t)
		defer pacer.Close()
		for _, mux := range []bool{false, true} {
			a, err := NewSession(Config{Local: localhost, RTCPMux: mux}, quiet, pacer, ports)
			require.NoError(t, err)
			b, err := NewSession(Config{Local: localhost, RTCPMux: mux}, quiet, pacer, ports)
			require.NoError(t, err)
			require.NoError(t, a.Update(params(b, codecPCMU, dtmf8k)))
			require.NoError(t, b.Update(params(a, codecPCMU, dtmf8k)))
			require.NoError(t, a.SetSource(&tone{hz: 500, amp: 1000, rate: 16000}, 16000))
			ctx, cancel := context.WithCancel(context.Background())
			readErr := make(chan error, 1)
			go func() {
				buf := make([]int16, 320)
				for {
					if _, err := b.ReadFrame(ctx, buf); err != nil {
						readErr <- err
						return
					}
				}
			}()
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, a.Close())
			require.NoError(t, b.Close())
			require.ErrorIs(t, <-readErr, ErrClosed, "Close releases the reader")
			cancel()
			require.ErrorIs(t, a.Update(params(b, codecPCMU, Codec{})), ErrClosed)
			require.ErrorIs(t, a.WriteFrame(make([]int16, 320)), ErrClosed)
			require.ErrorIs(t, a.Err(), ErrClosed)
		}
	}()
	requireNoLeak(t, before)
}

// TestCodecChange switches a running call from PCMU to Opus (a re-INVITE)
// and back; audio keeps flowing in both directions.
func TestCodecChange(t *testing.T) {
	a, b := pair(t, slack, codecPCMU, Codec{})
	require.NoError(t, a.SetSource(&tone{hz: 700, amp: 7000, rate: 16000}, 16000))
	got := collect(t, b, 600*time.Millisecond)
	require.Greater(t, toneFrames(got[len(got)-3200:], 700), 0.8)
	require.NoError(t, a.Update(params(b, codecOpus, Codec{})))
	require.NoError(t, b.Update(params(a, codecOpus, Codec{})))
	got = collect(t, b, 800*time.Millisecond)
	require.Greater(t, toneFrames(got[len(got)-4800:], 700), 0.8)
	require.Equal(t, "opus", b.Snapshot().Codec)
}

// TestDualStackDefault binds the default address (all interfaces, IPv4
// and IPv6) and talks to an IPv4 peer: IPv4-mapped sources are unmapped,
// so latching and the SDP address agree.
func TestDualStackDefault(t *testing.T) {
	pacer, ports := newPacer(t), newPorts(t)
	a, err := NewSession(Config{}, quiet, pacer, ports)
	require.NoError(t, err)
	defer a.Close()
	b, err := NewSession(Config{}, quiet, pacer, ports)
	require.NoError(t, err)
	defer b.Close()
	require.True(t, a.LocalAddr().Addr().IsUnspecified())
	require.NoError(t, a.Update(params(b, codecPCMA, Codec{})))
	require.NoError(t, b.Update(params(a, codecPCMA, Codec{})))
	require.Eventually(t, func() bool {
		return a.Metrics().PacketsReceived.Load() > 10 && b.Metrics().PacketsReceived.Load() > 10
	}, 2*time.Second, 10*time.Millisecond)
	require.Zero(t, a.Metrics().SourceDrops.Load())
	b.mu.Lock()
	peer := b.peer
	b.mu.Unlock()
	require.Equal(t, netip.AddrPortFrom(localhost, a.LocalAddr().Port()), peer)
}

// TestIPv6Peer: a session on the default address (dual-stack) and one on
// ::1 exchange media over IPv6, each latching the other's IPv6 source.
func TestIPv6Peer(t *testing.T) {
	pacer, ports := newPacer(t), newPorts(t)
	a, err := NewSession(Config{}, quiet, pacer, ports)
	require.NoError(t, err)
	defer a.Close()
	b, err := NewSession(Config{Local: netip.IPv6Loopback()}, quiet, pacer, ports)
	require.NoError(t, err)
	defer b.Close()
	pa, pb := params(b, codecPCMU, Codec{}), params(a, codecPCMU, Codec{})
	pa.Remote = netip.AddrPortFrom(netip.IPv6Loopback(), b.LocalAddr().Port())
	pb.Remote = netip.AddrPortFrom(netip.IPv6Loopback(), a.LocalAddr().Port())
	require.NoError(t, a.Update(pa))
	require.NoError(t, b.Update(pb))
	require.Eventually(t, func() bool {
		return a.Metrics().PacketsReceived.Load() > 10 && b.Metrics().PacketsReceived.Load() > 10
	}, 2*time.Second, 10*time.Millisecond)
	require.Zero(t, a.Metrics().SourceDrops.Load())
	require.Zero(t, b.Metrics().SourceDrops.Load())
	a.mu.Lock()
	peer := a.peer
	a.mu.Unlock()
	require.Equal(t, pa.Remote, peer)
}
