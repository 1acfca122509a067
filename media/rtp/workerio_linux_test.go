package rtp

import (
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	prtp "github.com/pion/rtp"
	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media/pace"
)

// TestSendBatch: 300 sessions on a pacer with send batches (more than
// batchSlots: a tick's packets are held in two chunks of slots and go out
// in two submissions) each send 25 ticks of
// audio to one sink; every packet arrives, each session's sequence numbers
// are consecutive and its timestamps step by a frame, and no batched send
// failed.
func TestSendBatch(t *testing.T) {
	pacer, err := pace.New(pace.Config{NewWorker: NewPacerWorker}, nil)
	require.NoError(t, err)
	defer pacer.Close()
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer sink.Close()
	require.NoError(t, sink.SetReadBuffer(8<<20))
	ports := newPorts(t)
	const calls, ticks = 300, 25
	src := newTableSource(16000)
	p := Params{Remote: sink.LocalAddr().(*net.UDPAddr).AddrPort(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}
	var batch *workerIO
	sessions := make(map[uint32]*Session)
	for range calls {
		s := newSession(t, Config{RTCPMux: true, MediaTimeout: -1}, pacer, ports)
		require.NoError(t, s.Update(p))
		require.NoError(t, s.SetSource(src, 16000))
		s.txMu.Lock()
		b := s.tx.batch
		s.txMu.Unlock()
		require.NotNil(t, b, "io_uring is available here, so every session sends through its worker's batch")
		if batch == nil {
			batch = b
		}
		require.Same(t, batch, b, "one worker, one batch")
		sessions[s.SSRC()] = s
	}

	type stream struct {
		seq, ts uint32
		n       int
	}
	got := map[uint32]*stream{}
	buf := make([]byte, 1500)
	var pkt prtp.Packet
	require.NoError(t, sink.SetReadDeadline(time.Now().Add(10*time.Second)))
	for total := 0; total < calls*ticks; total++ {
		n, err := sink.Read(buf)
		require.NoError(t, err, "after %d packets", total)
		require.NoError(t, pkt.Unmarshal(buf[:n]))
		require.Contains(t, sessions, pkt.SSRC)
		require.Equal(t, uint8(0), pkt.PayloadType)
		require.Len(t, pkt.Payload, 160)
		st := got[pkt.SSRC]
		if st == nil {
			got[pkt.SSRC] = &stream{seq: uint32(pkt.SequenceNumber), ts: pkt.Timestamp, n: 1}
			continue
		}
		require.Equal(t, uint16(st.seq+1), pkt.SequenceNumber, "ssrc %x: consecutive sequence numbers", pkt.SSRC)
		require.Equal(t, st.ts+160, pkt.Timestamp, "ssrc %x: one frame per packet", pkt.SSRC)
		st.seq, st.ts = uint32(pkt.SequenceNumber), pkt.Timestamp
		st.n++
	}
	require.Len(t, got, calls, "every session sent")
	require.Zero(t, batch.failed.Load())
	for _, s := range sessions {
		require.GreaterOrEqual(t, s.Metrics().PacketsSent.Load(), uint64(1))
	}
}

// TestSendBatchFailureCounted: a send the kernel refuses (to a port of
// 0) is counted as failed, and the batch goes on sending what follows.
func TestSendBatchFailureCounted(t *testing.T) {
	b, sk, sink := newWorkerToSink(t)
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	errs := SendErrors()
	require.NoError(t, b.add(sk, []byte("first"), to))
	require.NoError(t, b.add(sk, []byte("refused"), netip.AddrPortFrom(to.Addr(), 0)))
	require.NoError(t, b.add(sk, []byte("third"), to))
	b.AfterTicks(time.Now(), time.Time{})
	require.EqualValues(t, 1, b.failed.Load())
	require.Equal(t, errs+1, SendErrors(), "counted for /metrics too")
	buf := make([]byte, 100)
	require.NoError(t, sink.SetReadDeadline(time.Now().Add(5*time.Second)))
	for _, want := range []string{"first", "third"} {
		n, err := sink.Read(buf)
		require.NoError(t, err)
		require.Equal(t, want, string(buf[:n]))
	}
	require.Zero(t, b.n, "the batch is empty after AfterTicks")
}

// TestSendBatchLeavesEachTick: a lone session's packet does not wait for
// the batch to fill; it leaves in the tick that made it.
func TestSendBatchLeavesEachTick(t *testing.T) {
	pacer := newPacer(t)
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer sink.Close()
	s := newSession(t, Config{RTCPMux: true, MediaTimeout: -1}, pacer, newPorts(t))
	require.NoError(t, s.Update(Params{Remote: sink.LocalAddr().(*net.UDPAddr).AddrPort(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}))
	buf := make([]byte, 1500)
	require.NoError(t, sink.SetReadDeadline(time.Now().Add(10*time.Second)))
	start := time.Now()
	for range 10 {
		_, err := sink.Read(buf)
		require.NoError(t, err)
	}
	// Ten ticks take 200 ms; a batch that waited to fill would take 2.5 s
	// to send its first packet.
	require.Less(t, time.Since(start), time.Second)
}

// TestSendWorkerDuplex: on a node's pacer (NewPacerWorker), pairs of
// sessions talking to each other send through the worker's batch, read
// their own sockets, and hear every packet their partner sent.
func TestSendWorkerDuplex(t *testing.T) {
	pacer, err := pace.New(pace.Config{NewWorker: NewPacerWorker}, nil)
	require.NoError(t, err)
	defer pacer.Close()
	ports := newPorts(t)
	src := newTableSource(16000)
	var all []*Session
	for range 20 {
		pair := [2]*Session{
			newSession(t, Config{RTCPMux: true, MediaTimeout: -1}, pacer, ports),
			newSession(t, Config{RTCPMux: true, MediaTimeout: -1}, pacer, ports),
		}
		for i, s := range pair {
			require.NoError(t, s.Update(Params{Remote: pair[1-i].LocalAddr(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}))
			require.NoError(t, s.SetSource(src, 16000))
			s.SetSink(&nopSink{})
			s.txMu.Lock()
			b := s.tx.batch
			s.txMu.Unlock()
			require.NotNil(t, b, "it sends through the worker's batch")
			all = append(all, s)
		}
	}
	require.Eventually(t, func() bool {
		for _, s := range all {
			if s.Metrics().PacketsReceived.Load() < 25 {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every session hears its partner")
	for _, s := range all {
		m := s.Metrics()
		require.Zero(t, m.PacketsLost.Load())
		require.InDelta(t, float64(m.PacketsSent.Load()), float64(m.PacketsReceived.Load()), 3, "what one side sent, the other read (a tick or two in flight)")
	}
}

// TestSendHeldUpToMax: a worker holds a tick's packets until AfterTicks
// however many chunks of slots they take, up to maxHeld; the packet that
// reaches maxHeld sends the batch mid-tick, and the kernel takes every
// packet once.
func TestSendHeldUpToMax(t *testing.T) {
	w, sk, sink := newWorkerToSink(t)
	var sent int
	w.done = func(c *uringCQE) {
		require.Equal(t, int32(2), c.res, "a 2-byte datagram went out")
		sent++
		w.complete(c)
	}
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()

	for i := range 3*batchSlots + 1 {
		require.NoError(t, w.add(sk, []byte{byte(i), byte(i >> 8)}, to))
	}
	require.Equal(t, 3*batchSlots+1, w.n, "held in four chunks")
	require.Zero(t, sent, "nothing sent before AfterTicks")
	w.AfterTicks(time.Time{}, time.Time{})
	require.Equal(t, 3*batchSlots+1, sent)
	require.Zero(t, w.n)
	buf := make([]byte, 64)
	require.NoError(t, sink.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := sink.Read(buf)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0}, buf[:n], "the first packet arrived first")

	sent = 0
	for i := range maxHeld + 5 {
		require.NoError(t, w.add(sk, []byte{byte(i), 1}, to))
	}
	require.Equal(t, maxHeld, sent, "the batch went out when it reached maxHeld")
	require.Equal(t, 5, w.n)
	w.AfterTicks(time.Time{}, time.Time{})
	require.Equal(t, maxHeld+5, sent)
	require.Zero(t, w.failed.Load())
	require.Len(t, w.slots, maxHeld/batchSlots, "chunks are reused, not grown past maxHeld")
}

// newWorkerToSink returns a worker, a socket to send from and a UDP sink
// on loopback, all closed when the test ends.
func newWorkerToSink(t *testing.T) (*workerIO, *sock, *net.UDPConn) {
	t.Helper()
	w, err := newWorkerIO()
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	sk, err := listenSock(localhost, 0)
	require.NoError(t, err)
	t.Cleanup(func() { sk.close() })
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { sink.Close() })
	return w, sk, sink
}

// TestSendHeldUntilTheirTime: AfterTicks with a send time returns at once
// and the send thread sends the packets at that time (two chunks of
// slots, in order); the next packet's slot waits for them (settle), so a
// held packet is never overwritten; a refused send among them is counted
// and does not stop the rest.
func TestSendHeldUntilTheirTime(t *testing.T) {
	w, sk, sink := newWorkerToSink(t)
	require.NoError(t, sink.SetReadBuffer(1<<20))
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	const n, refused = batchSlots + 10, batchSlots / 2
	// The sink is read as the packets come, so that none is dropped
	// for want of room on a busy machine.
	type arrival struct {
		at time.Time
		b  []byte
	}
	arrivals := make(chan arrival, n)
	go func() {
		buf := make([]byte, 64)
		_ = sink.SetReadDeadline(time.Now().Add(10 * time.Second))
		for range n - 1 {
			got, err := sink.Read(buf)
			if err != nil {
				close(arrivals)
				return
			}
			arrivals <- arrival{time.Now(), slices.Clone(buf[:got])}
		}
	}()
	for i := range n {
		dst := to
		if i == refused {
			dst = netip.AddrPortFrom(to.Addr(), 0) // refused by the kernel
		}
		require.NoError(t, w.add(sk, []byte{byte(i), byte(i >> 8)}, dst))
	}
	send := time.Now().Add(60 * time.Millisecond)
	w.AfterTicks(time.Now(), send)
	handed := time.Now()
	require.True(t, handed.Before(send.Add(-40*time.Millisecond)), "AfterTicks returned %v before the send time", send.Sub(handed))
	require.Equal(t, n, w.sending, "every send handed to the send thread")
	require.True(t, w.sender.busy(), "and not submitted yet")

	for i := range n {
		if i == refused {
			continue
		}
		a, ok := <-arrivals
		require.True(t, ok, "packet %d arrived", i)
		require.False(t, a.at.Before(send), "packet %d arrived %v before its time", i, send.Sub(a.at))
		require.Equal(t, []byte{byte(i), byte(i >> 8)}, a.b, "packet %d in order", i)
	}

	// Held again: the next slot is free only once the kernel sent them.
	require.NoError(t, w.add(sk, []byte("a"), to))
	send = time.Now().Add(40 * time.Millisecond)
	w.AfterTicks(time.Now(), send)
	_ = w.next()
	require.False(t, time.Now().Before(send), "next waited for the held send")
	require.Zero(t, w.sending)
	require.EqualValues(t, 1, w.failed.Load(), "the refused send, and only it")
}

// TestCloseLeavesNoHeldSendBehind: on the node's pacer (AlignSends) a
// tick's packets wait up to half a period for their time after the
// session's Tick; Close (through the pacer's Unregister) waits for them,
// so the socket a session then closes has no packet left to send. Were it
// not so, the next socket to take the closed descriptor would send the
// held packet from its own address: the sink here must hear every packet
// from a session's own port, never from the socket opened right after
// the close.
func TestCloseLeavesNoHeldSendBehind(t *testing.T) {
	pacer, err := pace.New(pace.Config{NewWorker: NewPacerWorker, AlignSends: true}, nil)
	require.NoError(t, err)
	defer pacer.Close()
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer sink.Close()
	ports := newPorts(t)
	src := newTableSource(16000)
	buf := make([]byte, 1500)
	prev := -1 // the last session's port
	for i := range 20 {
		s := newSession(t, Config{RTCPMux: true, MediaTimeout: -1}, pacer, ports)
		require.NoError(t, s.Update(Params{Remote: sink.LocalAddr().(*net.UDPAddr).AddrPort(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: true, Receive: true}))
		require.NoError(t, s.SetSource(src, 16000))
		own := s.LocalAddr().Port()
		require.NoError(t, sink.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, from, err := sink.ReadFromUDPAddrPort(buf)
		for err == nil && int(from.Port()) == prev {
			// The last session's packet, sent from its own socket
			// before its close, that the drain below had no time to
			// read on a loaded machine: not this test's concern.
			_, from, err = sink.ReadFromUDPAddrPort(buf)
		}
		require.NoError(t, err)
		require.Equal(t, own, from.Port(), "session %d sends", i)
		prev = int(own)
		time.Sleep(time.Duration(i) * time.Millisecond) // at every phase of the tick
		require.NoError(t, s.Close())
		// The lowest free descriptor: the session's socket's, most likely.
		other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		time.Sleep(25 * time.Millisecond) // past any send held for a tick
		require.NoError(t, sink.SetReadDeadline(time.Now().Add(time.Millisecond)))
		for {
			_, from, err := sink.ReadFromUDPAddrPort(buf)
			if err != nil {
				break
			}
			require.Equal(t, own, from.Port(), "session %d: a packet after its close came from another socket", i)
		}
		other.Close()
	}
}

// busy reports whether a batch handed over is not submitted yet.
func (s *sender) busy() bool {
	return atomic.LoadUint32(s.word(&s.c.sent)) != atomic.LoadUint32(s.word(&s.c.asked))
}
