// Package rtp carries a call's audio over RTP and RTCP (RFC 3550) on the
// node's own UDP sockets, with github.com/pion/rtp for the packet header.
//
// # Lifecycle
//
//	ports, _ := rtp.NewPorts(10000, 20000)         // once per node
//	s, _ := rtp.NewSession(cfg, log, pacer, ports)  // binds, joins the pacer
//	sdpAnswer(s.LocalAddr())
//	s.Update(rtp.Params{Remote: ..., Codec: ..., Send: true, Receive: true})
//	s.SetSink(engine)            // or: a goroutine looping on s.ReadFrame(ctx, in)
//	s.SetSource(engine, 16000)   // or: s.WriteFrame(out) from a goroutine
//	<-s.Done()                   // media timeout
//	s.Close()
//
// A Session binds an even port from the node's range for RTP and the odd
// port above it for RTCP, or one port with RTCP multiplexing (RFC 5761).
// Update starts the media with the negotiated payload types and clock
// rates (from the SDP the sip package negotiated), and changes them on a
// re-INVITE: a new remote address, a new codec, hold (Send or Receive
// false).
//
// # Receiving
//
// Reception is driven by the node pacer's tick, not by the packets. Every
// 20 ms, after all the sessions of a pacer worker sent their packet (the
// PostTick phase of media/pace), each drains its RTP socket without
// blocking: one recvmmsg(2) with MSG_DONTWAIT reads up to 8 datagrams
// (through syscall.RawConn.Read with a callback that never asks to park,
// so no goroutine waits on the socket and the netpoller never wakes one),
// repeated while batches come back full, up to 32 datagrams a tick; a
// normal call costs one such call returning its one packet. Each datagram
// keeps the arrival time the kernel stamped on it (SO_TIMESTAMPNS), so the
// jitter statistics and the jitter buffer see the network's timing, not
// the ticks'. The RTCP socket, when RTCP is not multiplexed, keeps a
// blocking goroutine of its own: one report every few seconds.
//
// Each datagram is parsed into a reused pion Packet. The first valid packet from anywhere
// latches the peer (symmetric RTP, RFC 4961: our packets then go to where
// its packets come from, whatever the SDP said, which is what gets through
// NATs); afterwards packets from other sources are dropped and counted
// (Metrics.SourceDrops). Audio packets (PCMU, PCMA or Opus with the
// negotiated payload type) go through the RFC 3550 Appendix A statistics
// into the adaptive jitter buffer (media/jitter); comfort noise (PT 13,
// RFC 3389) goes there too and decodes to noise at the signalled level;
// telephone-events (RFC 4733) become one Digit per key press (OnDTMF),
// robust to a missing marker bit, lost start or end packets and repeated
// ends. RTCP sender and receiver reports from the peer give the round trip
// and how the peer hears us. A media timeout (no RTP for MediaTimeout while
// the peer should be sending) closes Done.
//
// After the drain, the frame that is due comes out of the jitter buffer's
// playout (decoded, concealed where packets are missing, resampled once:
// G.711 8 kHz to 16 kHz with resample.QualityPhone, a half-band filter
// flat over the whole telephone band whose images stay far below G.711's
// own noise; Opus decodes at 16 kHz directly) and goes to
// the Sink, on the same goroutine: for a call's engine, that is its input
// processing (VAD, turn detection, recording) done in the tick too. Without
// a Sink, ReadFrame hands the frame to a goroutine that waits for it.
//
// Latency: a frame holds every packet that arrived before its tick's
// drain, exactly as when a receive goroutine pushed each packet into the
// jitter buffer on arrival, so the audio is not delayed at all. What waits
// for the next tick is the handling of a packet: latching, DTMF digits and
// RTCP on a multiplexed port are seen at most one period (20 ms) plus the
// tick's lateness after arrival (TestDrainedReceptionLatency checks that
// bound; TestDrainBurstInOrder that a burst between two ticks is taken
// whole, in order).
//
// # Sending
//
// The session is a stream on the node's pacer (media/pace): every 20 ms
// its Tick sends exactly one packet: a DTMF event packet while digits are
// being sent (start, updates, three end packets), else the next audio frame
// (pulled from a Source and encoded right there, or taken from the queue
// WriteFrame encoded into), else comfort noise when agreed or encoded
// silence. Sequence numbers and timestamps run continuously, the marker
// bit starts each talkspurt, and RTCP reports (SR with a reception report
// and SDES CNAME, BYE at Close) go out every RTCPInterval.
//
// # Goroutines and allocation
//
// A session owns no goroutine with RTCP multiplexing and one (the RTCP
// reader) without; its sending and receiving run on the pacer worker it
// was registered with, in Tick and PostTick, and so do the Source, the
// Sink and OnDTMF, which must not block. ReadFrame, when there is no Sink,
// has one caller goroutine, WriteFrame one (possibly another); Update,
// SetSource, SetSink, SendDTMF, Flush, Snapshot and Close may be called
// from any goroutine (Close not from a Source, Sink or OnDTMF). After
// start-up nothing allocates per packet or per frame on any path: drain,
// receive, jitter buffer, decode, resample, encode and send (AllocsPerRun
// tests guard it).
//
// Why not a receive goroutine per call (DESIGN.md section 4 as first
// written, and issue 7): each packet then woke that goroutine through the
// netpoller, and each frame woke a second one to move it into the engine;
// at 500 calls that was 50,000 goroutine switches a second, and the
// profile of the side-by-side benchmark with rtpengine put 38% of the
// node's CPU in the kernel's context switching. Draining on the tick does
// the same work with no wake-up at all, in the order the pacer already
// keeps, and spreads over cores with the pacer's workers.
package rtp
