// Package rtp carries a call's audio over RTP and RTCP (RFC 3550) on the
// node's own UDP sockets, with github.com/pion/rtp for the packet header.
//
// # Lifecycle
//
//	ports, _ := rtp.NewPorts(10000, 20000)         // once per node
//	s, _ := rtp.NewSession(cfg, log, pacer, ports)  // binds, starts receiving
//	sdpAnswer(s.LocalAddr())
//	s.Update(rtp.Params{Remote: ..., Codec: ..., Send: true, Receive: true})
//	go func() { for { n, err := s.ReadFrame(ctx, in); ...; engine.WriteFrame(in[:n]) } }()
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
// One goroutine per socket reads datagrams into a reused buffer and parses
// them into a reused pion Packet. The first valid packet from anywhere
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
// ReadFrame returns the peer's audio as 20 ms frames at 16 kHz, one per
// pacer tick, decoded and concealed by the jitter buffer's playout and
// resampled once (G.711 8 kHz to 16 kHz; Opus decodes at 16 kHz directly).
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
// A session owns one receive goroutine (two without RTCP multiplexing),
// started by NewSession and stopped by Close. ReadFrame has one caller
// goroutine, WriteFrame one (possibly another); Update, SetSource,
// SendDTMF, Flush, Snapshot and Close may be called from any goroutine.
// After start-up nothing allocates per packet or per frame on any path:
// receive, jitter buffer, decode, resample, encode and send (AllocsPerRun
// tests guard it).
package rtp
