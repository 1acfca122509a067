// Package webrtc is the browser front door of the media engine: it answers
// a browser's SDP offer with one pion PeerConnection per call and carries
// the call's audio as Opus both ways, plus a data channel for events.
//
// # Transport
//
// Every session's ICE, DTLS and SRTP share one UDP port (pion's UDP mux),
// so a node needs one firewall rule. Host candidates carry the interface
// addresses, or Config.PublicIPs for a node behind a 1:1 NAT; optional TURN
// servers give the node relay candidates. Browsers' mDNS (.local)
// candidates are not resolved: the first connectivity check from such a
// browser creates a peer-reflexive candidate, which is enough. DTLS-SRTP
// keys the media (RFC 5764) with SRTP and SRTCP replay protection on; one
// ECDSA certificate, renewed weekly, serves every session, since a key per
// call would cost more CPU than its audio. Signalling is one HTTP round
// trip: Answer returns only when ICE gathering is complete, so the answer
// holds every candidate and no trickle channel is needed.
//
// # Audio
//
// Received Opus (48 kHz RTP clock, RFC 7587) goes through media/jitter's
// adaptive buffer and is decoded straight to Config.InputRate (libopus
// decodes at 8, 16, 24 or 48 kHz, so there is no resampler on the way
// in), with FEC and concealment for losses. The answer tells the browser
// maxplaybackrate=InputRate (RFC 7587 section 6.1), so it sends wideband
// SILK rather than fullband hybrid packets, which cost half as much to
// decode and lose nothing the engine would hear. The agent's frames at
// Config.OutputRate are encoded on the writer's goroutine, at 16 or 48
// kHz directly (other rates are resampled once to 48 kHz), into a small
// queue the node's pacer (media/pace) empties one packet per 20 ms tick.
// The encoder starts in CELT-only low-delay mode and turns to SILK with
// in-band FEC once the browser's RTCP reports loss (Config.FECLossPercent).
// Digital silence is not encoded at all: it becomes a DTX gap, which the
// RTP timestamps carry. The steady state allocates nothing in this package
// (pion's SRTP and interceptors have their own costs).
//
// # Lifecycle
//
// Server.Answer starts a Session; the engine drives it with ReadFrame and
// WriteFrame, or with Run and a Conversation such as Echo. The session ends
// on the browser's {"type":"hangup"} data-channel message, its DTLS close
// or data channel closing (the page went away), ICE consent failure
// (Config.DisconnectedTimeout plus FailedTimeout of silence), no connection
// within ConnectTimeout, SessionOptions.MaxDuration, or Close. Done is then
// closed, and End says why and gives the final Stats: the call's
// media/quality metrics (RTP loss and RFC 3550 jitter of the browser's
// stream, jitter-buffer delay and concealment, the browser's RTCP reception
// reports with the round trip, dead air and talk-over, and the E-model
// MOS), the jitter buffer's counters and the caller audio's energy.
//
// # Cost
//
// libopus is most of a call's CPU. With audio both ways all the time, the
// load probe (load_test.go) measured SILK encoding (complexity 1, FEC) at
// over half of the node's CPU and decoding the browsers' fullband packets
// at about a quarter; CELT encoding costs less than half of SILK's at 16
// kHz, with better measured fidelity at 32 kb/s (codec_test.go), and
// wideband SILK decodes in half the time. Per call the node now spends
// about two thirds of the CPU it did (bench/RESULTS.md, "Browser calls").
// Silence is never encoded.
package webrtc
