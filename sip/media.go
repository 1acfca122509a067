package sip

import (
	"context"
	"net/netip"
	"time"

	"github.com/voiced/voiced/sip/sdp"
)

// MediaPort opens a media session for a call. Open is called once per
// call, after admission (inbound) or before the INVITE (outbound), with
// the call it serves; the session's LocalAddr goes into our SDP. The
// Server closes the session when the call ends.
type MediaPort interface {
	Open(ctx context.Context, c *Call) (Media, error)
}

// Media is one call's media session (RTP and what runs on it).
type Media interface {
	// LocalAddr is where we receive RTP. An unspecified IP is replaced
	// in SDP by Config.AdvertiseHost.
	LocalAddr() netip.AddrPort
	// Update starts the stream or changes it: the first call starts
	// media (at 200 OK and ACK, or at 183 with early media), later ones
	// follow re-INVITEs and UPDATEs (new remote address, codec change,
	// hold: see Stream.Sends and Stream.Receives). It must not block on
	// the network.
	Update(s Stream) error
	// Close stops the session and releases its ports. Called once.
	Close() error
}

// DTMFReceiver is implemented by a Media that takes digits signalled
// out of band: SIP INFO with application/dtmf-relay or application/dtmf.
// RFC 4733 digits in RTP never pass through this package.
type DTMFReceiver interface {
	DTMF(digit rune, duration time.Duration)
}

// Stream is the negotiated media of a call at one moment.
type Stream struct {
	// Remote is where the peer receives RTP.
	Remote netip.AddrPort
	// Codec is the audio format with the payload type to send with;
	// RecvPT is the payload type we receive it with.
	Codec  sdp.Codec
	RecvPT uint8
	// DTMF is RFC 4733 telephone-event with its send payload type; Name
	// is empty when the peer has none. RecvDTMFPT is ours.
	DTMF       sdp.Codec
	RecvDTMFPT uint8
	// Direction is ours: Sends() false while the peer holds us (stop
	// sending, keep receiving what comes), Receives() false while we
	// hold the peer or the peer sends nothing.
	Direction sdp.Direction
	// PTime is the peer's packet time in ms (0 when unstated); we send
	// 20 ms packets whatever it says.
	PTime int
}

// Sends reports whether we should send media.
func (s Stream) Sends() bool { return s.Direction.Sends() }

// Receives reports whether the peer sends us media.
func (s Stream) Receives() bool { return s.Direction.Receives() }

func streamOf(st sdp.Stream, ours sdp.Direction) Stream {
	dir := ours.Intersect(st.Direction.Reverse())
	if st.Remote.Addr().IsUnspecified() {
		// RFC 2543 hold: c=0.0.0.0 means do not send.
		dir = dir.Intersect(sdp.RecvOnly)
	}
	return Stream{Remote: st.Remote, Codec: st.Codec, RecvPT: st.RecvPT, DTMF: st.DTMF, RecvDTMFPT: st.RecvDTMFPT, Direction: dir, PTime: st.PTime}
}
