package load

import (
	"context"
	"net/netip"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
)

// Target sets up and ends calls on the system under test.
type Target interface {
	// Dial sets up one call. It returns when media can flow (for SIP,
	// after the 200 OK and the ACK) or with an error.
	Dial(ctx context.Context, o Offer) (Session, Answer, error)
}

// Offer is what the generator tells a Target about a new call.
type Offer struct {
	Index int
	// Codec is what the call sends.
	Codec sdp.Codec
	// SendFrom is the socket the call's RTP leaves from (where a
	// symmetric peer sends back).
	SendFrom netip.AddrPort
	// RecvOn is the socket of the call's second leg, for relay targets;
	// it equals SendFrom when the lanes do not differ.
	RecvOn netip.AddrPort
	// SSRC identifies the call's outgoing stream.
	SSRC uint32
}

// Answer is what a Target tells the generator once a call is up.
type Answer struct {
	// SendTo is where the call's RTP goes.
	SendTo netip.AddrPort
	// ReplyFrom is the address returning media comes from; the zero
	// value means SendTo.
	ReplyFrom netip.AddrPort
	// Codec is the codec of the returning media (its payload type as
	// negotiated).
	Codec sdp.Codec
	// OnRecvLane is true when media comes back on Offer.RecvOn rather than
	// on Offer.SendFrom.
	OnRecvLane bool
}

// Session is one call on the Target.
type Session interface {
	// Hangup ends the call (BYE, ng delete, ...).
	Hangup(ctx context.Context) error
	// Ended is closed when the target ends the call by itself (a BYE from
	// the far end); nil when that cannot happen.
	Ended() <-chan struct{}
}

// MediaSession is a Session that carries its own media instead of RTP
// on the generator's lanes (the realtime WebSocket). The generator still
// paces it: SendFrame is called once per 20 ms on the pacer goroutine.
type MediaSession interface {
	Session
	// SendFrame queues frame (an index into the source cycle) for
	// sending. It runs on the pacer goroutine and must not block.
	SendFrame(frame int)
	// Stats returns the receive statistics so far; safe from any
	// goroutine.
	Stats() rtpstat.Summary
	// Audio returns, once the session has ended, the onset lags measured
	// and when the first audio came back (zero if none).
	Audio() (lags []time.Duration, firstAudio time.Time)
	// DrainJitter adds the per-packet transit differences |D| measured
	// since the last call to h and forgets them; safe from any goroutine.
	DrainJitter(h *rtpstat.Histogram)
}
