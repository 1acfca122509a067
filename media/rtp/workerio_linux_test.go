package rtp

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"syscall"
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
	b.AfterTicks(time.Now())
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

// TestRingReads: once the worker's AfterTicks has started a session's
// multishot read, every datagram the session receives is read for it,
// in order, each with its source and kernel arrival time; its buffers go
// back when the session releases them, and a session that left is not
// read for.
func TestRingReads(t *testing.T) {
	runtime.LockOSThread() // the reads' kernel work runs on this thread
	defer runtime.UnlockOSThread()
	f := newRingFixture(t, recvBufs)
	w, sk, s, in, peer := f.w, f.sk, f.s, f.in, f.peer
	sk.enableTimestamps()
	require.False(t, in.live, "the read starts at the worker's next AfterTicks")
	send := func(ps ...string) {
		t.Helper()
		for _, p := range ps {
			f.send(t, []byte(p))
		}
	}
	got := func() []string {
		t.Helper()
		var r []string
		now := time.Now()
		for i := range in.bids {
			data, from, _ := in.datagram(i, now)
			require.Equal(t, peer.LocalAddr().(*net.UDPAddr).AddrPort(), from)
			r = append(r, string(data))
		}
		in.release()
		return r
	}
	send("one", "two", "three")
	time.Sleep(30 * time.Millisecond)
	w.AfterTicks(time.Now())
	require.True(t, in.live)
	require.Len(t, in.bids, 3, "what waited in the socket is read when the read starts")
	data, _, at := in.datagram(0, time.Now())
	require.Equal(t, "one", string(data))
	require.Greater(t, time.Since(at), 25*time.Millisecond, "the kernel's arrival time, not the read's")
	require.Equal(t, []string{"one", "two", "three"}, got())
	require.Empty(t, in.bids, "released")

	// Datagrams that arrive between ticks are read when the thread next
	// enters the kernel, with no new request.
	for tick := range 3 {
		send(fmt.Sprint("a", tick), fmt.Sprint("b", tick))
		time.Sleep(5 * time.Millisecond)
		w.AfterTicks(time.Now())
		require.Equal(t, []string{fmt.Sprint("a", tick), fmt.Sprint("b", tick)}, got(), "tick %d", tick)
	}
	w.AfterTicks(time.Now())
	require.Empty(t, in.bids, "nothing arrived")
	require.True(t, in.live)

	w.leave(s)
	w.AfterTicks(time.Now()) // cancels the read
	send("four")
	time.Sleep(10 * time.Millisecond)
	w.AfterTicks(time.Now())
	require.Empty(t, in.bids, "no reads for a session that left")
	b := new(batch)
	b.init()
	require.Equal(t, 1, sk.readBatch(b), "the datagram waits for the session's own read")
	require.Equal(t, "four", string(b.bufs[0][:b.msgs[0].n]))
}

// TestRingReadRestarts: a multishot read that finds no free buffer ends;
// the session then reads its socket itself (nothing is lost or
// reordered), and the next AfterTicks starts the read again.
func TestRingReadRestarts(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := newRingFixture(t, 4)
	w, sk, in := f.w, f.sk, f.in
	w.AfterTicks(time.Now())
	require.True(t, in.live)

	restarts := ringRestarts.Load()
	for i := range 6 {
		f.send(t, []byte{byte(i)})
	}
	time.Sleep(10 * time.Millisecond)
	w.AfterTicks(time.Now())
	require.Len(t, in.bids, 4, "four buffers, four datagrams")
	require.False(t, in.live, "the read ended for want of a buffer")
	require.Equal(t, restarts+1, ringRestarts.Load())
	var order []byte
	now := time.Now()
	for i := range in.bids {
		data, _, _ := in.datagram(i, now)
		order = append(order, data...)
	}
	in.release()
	b := new(batch)
	b.init()
	n := sk.readBatch(b)
	for i := range n {
		order = append(order, b.bufs[i][:b.msgs[i].n]...)
	}
	require.Equal(t, []byte{0, 1, 2, 3, 4, 5}, order, "the session read the rest itself, in order")

	w.AfterTicks(time.Now())
	require.True(t, in.live, "started again")
	f.send(t, []byte{6})
	time.Sleep(5 * time.Millisecond)
	w.AfterTicks(time.Now())
	require.Len(t, in.bids, 1)
	data, _, _ := in.datagram(0, time.Now())
	require.Equal(t, []byte{6}, data)
	in.release()
}

// TestRingReadDropsFlood: a session that receives more than drainMax
// datagrams in a tick keeps drainMax; the rest are dropped and counted,
// and their buffers go back at once, so a flood on one call cannot take
// the buffers of the others.
func TestRingReadDropsFlood(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := newRingFixture(t, 64)
	w, in := f.w, f.in
	w.AfterTicks(time.Now())
	drops := ringDrops.Load()
	for tick := range 3 {
		for i := range drainMax + 8 {
			f.send(t, []byte{byte(i)})
		}
		time.Sleep(10 * time.Millisecond)
		w.AfterTicks(time.Now())
		require.Len(t, in.bids, drainMax, "tick %d", tick)
		require.True(t, in.live, "64 buffers were enough: dropped ones went back")
		in.release()
	}
	require.Equal(t, drops+3*8, ringDrops.Load())
}

// TestWorkerSendsOnly: a worker without read buffers (as on a kernel
// before multishot reads) still sends through its ring, and a session that
// joins it reads its socket itself.
func TestWorkerSendsOnly(t *testing.T) {
	w, err := newWorkerIOBufs(0)
	require.NoError(t, err)
	defer w.Close()
	require.Nil(t, w.bufs)
	sk, err := listenSock(localhost, 0)
	require.NoError(t, err)
	defer sk.close()
	s := &Session{sock: sk}
	w.join(s)
	require.Nil(t, s.rin.Load(), "nothing is read for the session")
	w.leave(s)
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer sink.Close()
	require.NoError(t, w.add(sk, []byte("sent"), sink.LocalAddr().(*net.UDPAddr).AddrPort()))
	w.AfterTicks(time.Now())
	buf := make([]byte, 16)
	require.NoError(t, sink.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := sink.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "sent", string(buf[:n]))
	require.Zero(t, w.failed.Load())
}

// TestSendWorkerDuplex: on a pacer whose workers only send
// (NewPacerSendWorker, serve's --rtp-receive=socket), pairs of sessions
// talking to each other send through the worker's batch, read their own
// sockets, and hear every packet their partner sent; the worker's
// goroutine is not locked to its thread.
func TestSendWorkerDuplex(t *testing.T) {
	pacer, err := pace.New(pace.Config{NewWorker: NewPacerSendWorker}, nil)
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
			require.Nil(t, s.rin.Load(), "the session reads its own socket")
			s.txMu.Lock()
			b := s.tx.batch
			s.txMu.Unlock()
			require.NotNil(t, b, "it sends through the worker's batch")
			require.False(t, b.ThreadBound(), "a worker that only sends is not tied to a thread")
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

// TestDrainThroughRing: a peer that sends five packets a tick to a
// session on a worker with a ring loses none and falls no further behind
// than a tick.
func TestDrainThroughRing(t *testing.T) {
	pacer := newPacer(t)
	s := newSession(t, Config{RTCPMux: true, MediaTimeout: -1, Jitter: jitterCfg(60, 400)}, pacer, newPorts(t))
	require.NotNil(t, s.rin.Load(), "the session reads through its worker's ring")
	require.Eventually(t, func() bool { return ringLive(pacer, s) }, time.Second, 5*time.Millisecond, "the worker started the session's read")
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	require.NoError(t, s.Update(Params{Remote: peer.LocalAddr().(*net.UDPAddr).AddrPort(), RTCPMux: true, Codec: codecPCMU, RecvPT: 0, Send: false, Receive: true}))
	to := loopbackTo(s)
	payload := make([]byte, 160)
	const bursts, per = 10, 5
	for b := range bursts {
		for i := range per {
			k := b*per + i
			_, err := peer.WriteTo(rtpPacket(0, uint16(k), uint32(k)*160, 0x1234, payload), to)
			require.NoError(t, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return s.Metrics().PacketsReceived.Load() == bursts*per },
		150*time.Millisecond, 5*time.Millisecond, "received %d", s.Metrics().PacketsReceived.Load())
	require.Zero(t, s.Metrics().PacketsLost.Load())
}

// TestSendHeldUpToMax: a worker holds a tick's packets until AfterTicks
// however many chunks of slots they take, up to maxHeld; the packet that
// reaches maxHeld sends the batch mid-tick, and the kernel takes every
// packet once.
func TestSendHeldUpToMax(t *testing.T) {
	w, sk, sink := newWorkerToSink(t)
	var sent int
	w.done = func(c *uringCQE) {
		if c.userData>>tagShift == tagSend {
			require.Equal(t, int32(2), c.res, "a 2-byte datagram went out")
			sent++
		}
		w.complete(c)
	}
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()

	for i := range 3*batchSlots + 1 {
		require.NoError(t, w.add(sk, []byte{byte(i), byte(i >> 8)}, to))
	}
	require.Equal(t, 3*batchSlots+1, w.n, "held in four chunks")
	require.Zero(t, sent, "nothing sent before AfterTicks")
	w.AfterTicks(time.Time{})
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
	w.AfterTicks(time.Time{})
	require.Equal(t, maxHeld+5, sent)
	require.Zero(t, w.failed.Load())
	require.Len(t, w.slots, maxHeld/batchSlots, "chunks are reused, not grown past maxHeld")
}

// newWorkerToSink returns a worker, a socket to send from and a UDP sink
// on loopback, all closed when the test ends.
func newWorkerToSink(t *testing.T) (*workerIO, *sock, *net.UDPConn) {
	t.Helper()
	w, err := newWorkerIOBufs(recvBufs)
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

// ringFixture is a worker with its own read buffers, a session socket
// that joined it (its read not started yet) and a peer that sends to that
// socket, all closed when the test ends. The test locks its goroutine to
// its thread first: the reads' kernel work runs on the thread that starts
// them.
type ringFixture struct {
	w    *workerIO
	sk   *sock
	s    *Session
	in   *reader
	peer *net.UDPConn
	to   *net.UDPAddr
}

func newRingFixture(t *testing.T, bufs int) *ringFixture {
	t.Helper()
	w, err := newWorkerIOBufs(bufs)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	sk, err := listenSock(localhost, 0)
	require.NoError(t, err)
	t.Cleanup(func() { sk.close() })
	s := &Session{sock: sk}
	w.join(s)
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	sa, err := syscall.Getsockname(sk.fd)
	require.NoError(t, err)
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}
	return &ringFixture{w: w, sk: sk, s: s, in: s.rin.Load(), peer: peer, to: to}
}

// send sends p from the peer to the session's socket.
func (f *ringFixture) send(t *testing.T, p []byte) {
	t.Helper()
	_, err := f.peer.WriteTo(p, f.to)
	require.NoError(t, err)
}

// ringLive reports whether s's multishot read is on, read on the pacer's
// goroutine (in a tick) as the session's drain reads it.
func ringLive(pacer *pace.Pacer, s *Session) bool {
	live := make(chan bool, 1)
	h, err := pacer.Register(probeStream(func() {
		select {
		case live <- s.rin.Load().live:
		default:
		}
	}))
	if err != nil {
		return false
	}
	defer pacer.Unregister(h)
	return <-live
}

// probeStream is a Stream that calls itself each Tick.
type probeStream func()

func (f probeStream) Tick(time.Time) { f() }
