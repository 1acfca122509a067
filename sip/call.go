package sip

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/voiced/voiced/sip/sdp"
)

// Call directions.
const (
	Inbound  = "inbound"
	Outbound = "outbound"
)

// Call is one phone call: its SIP dialog and media session. The media
// side (through MediaPort.Open) uses it to end or transfer the call.
// Safe for concurrent use.
type Call struct {
	srv       *Server
	id        int64
	direction string
	from, to  string
	sipCallID string
	log       *slog.Logger
	tp        *tport
	codecs    []sdp.Codec
	// narrowband: the call's audio is 8 kHz G.711 (Narrowband).
	narrowband bool

	media Media

	// Exactly one dialog is set once the INVITE is on its way.
	sd *sipgo.DialogServerSession
	cd *sipgo.DialogClientSession

	// setup is canceled when the call is hung up before it is answered.
	setup       context.Context
	cancelSetup context.CancelFunc
	// answeredCh is closed when the call is answered (markAnsweredLocked).
	answeredCh chan struct{}

	hangupCh chan string
	done     chan struct{}
	refresh  chan struct{}

	mu          sync.Mutex
	origin      sdp.Origin
	local       netip.AddrPort
	ourDir      sdp.Direction
	stream      sdp.Stream
	lastRemote  *sdp.Session
	haveStream  bool
	answered    time.Time
	acked       bool
	byed        bool
	hungUp      string
	forceReason string
	peerAllow   string
	se          time.Duration
	weRefresh   bool
	busy        bool
	lastSent    []byte
	ackWait     chan *sip.Request
	notify      chan int

	// route is the trunk transfers dial through (nil: none); see
	// leg.go. owner is set on a leg of another call: the call whose
	// record it belongs to. next is the leg a REFER from the peer moved
	// the conversation to (refer.go); moved lists every such leg, and
	// bridged is the leg a transfer bridged the caller to (bridge.go).
	route   *Trunk
	owner   *Call
	key     string
	next    *Call
	moved   []*Call
	bridged *Call
	moving  bool
	ended   bool
}

func (s *Server) newCall(id int64, direction, from, to, sipCallID string, tp *tport, codecs []sdp.Codec) *Call {
	c := &Call{srv: s, id: id, direction: direction, from: from, to: to, sipCallID: sipCallID, tp: tp, codecs: codecs,
		narrowband: allG711(codecs), hangupCh: make(chan string, 1), done: make(chan struct{}), refresh: make(chan struct{}, 1),
		answeredCh: make(chan struct{})}
	c.log = s.log.With("call_id", id, "sip_call_id", sipCallID, "direction", direction)
	c.setup, c.cancelSetup = context.WithCancel(s.ctx)
	var b [8]byte
	rand.Read(b[:])
	c.origin = sdp.Origin{Username: "voiced", SessionID: binary.BigEndian.Uint64(b[:]) >> 1, Version: 1}
	return c
}

// ID returns the control plane's call id.
func (c *Call) ID() int64 { return c.id }

// Narrowband reports whether the call's audio is G.711's 8 kHz, as far as
// is known when the media opens: the codec chosen from an inbound call's
// offer is PCMU or PCMA, or, for an outbound call or an inbound one
// without an offer, every codec we offer is. The media side runs such a
// call's agent at 8 kHz, so its audio is encoded as produced and recorded
// at the call's rate. A later re-INVITE may still move the call to Opus;
// the agent then stays at 8 kHz and its audio is resampled to Opus's
// rate.
func (c *Call) Narrowband() bool { return c.narrowband }

// allG711 reports whether every audio codec in cs is PCMU or PCMA
// (telephone-event is not audio); false for none.
func allG711(cs []sdp.Codec) bool {
	n := 0
	for _, c := range cs {
		switch {
		case strings.EqualFold(c.Name, "telephone-event"):
		case strings.EqualFold(c.Name, "PCMU"), strings.EqualFold(c.Name, "PCMA"):
			n++
		default:
			return false
		}
	}
	return n > 0
}

// Direction returns Inbound or Outbound.
func (c *Call) Direction() string { return c.direction }

// From returns the caller's number (E.164 when it looks like one).
func (c *Call) From() string { return c.from }

// To returns the called number.
func (c *Call) To() string { return c.to }

// SIPCallID returns the dialog's Call-ID.
func (c *Call) SIPCallID() string { return c.sipCallID }

// Done is closed when the call has ended.
func (c *Call) Done() <-chan struct{} { return c.done }

// Hangup ends the call with reason as its end_reason (ReasonAgentEnd
// when empty): BYE when answered, CANCEL (outbound) or 480 (inbound)
// while ringing. It does not wait; Done reports the end.
func (c *Call) Hangup(reason string) {
	if reason == "" {
		reason = ReasonAgentEnd
	}
	c.hangup(reason)
}

func (c *Call) hangup(reason string) {
	c.mu.Lock()
	if c.hungUp != "" {
		c.mu.Unlock()
		return
	}
	c.hungUp = reason
	c.mu.Unlock()
	c.cancelSetup()
	select {
	case c.hangupCh <- reason:
	default:
	}
}

// hangupReason returns the reason Hangup gave, if it was called.
func (c *Call) hangupReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hungUp
}

// dialogCtx is done when the dialog ended (BYE received, CANCEL before
// the answer).
func (c *Call) dialogCtx() context.Context {
	if c.sd != nil {
		return c.sd.Context()
	}
	return c.cd.Context()
}

// do sends an in-dialog request and waits for its final response.
func (c *Call) do(ctx context.Context, req *sip.Request) (*sip.Response, error) {
	if c.sd != nil {
		return c.sd.Do(ctx, req)
	}
	return c.cd.Do(ctx, req)
}

// write sends an in-dialog request without a transaction (ACK).
func (c *Call) write(req *sip.Request) error {
	if c.sd != nil {
		return c.sd.WriteRequest(req)
	}
	return c.cd.WriteRequest(req)
}

// remoteTarget is where in-dialog requests go: the peer's Contact.
func (c *Call) remoteTarget() sip.Uri {
	if c.sd != nil {
		if ct := c.sd.InviteRequest.Contact(); ct != nil {
			return *ct.Address.Clone()
		}
		return *c.sd.InviteRequest.From().Address.Clone()
	}
	if ct := c.cd.InviteResponse.Contact(); ct != nil {
		return *ct.Address.Clone()
	}
	return *c.cd.InviteRequest.Recipient.Clone()
}

// markAnsweredLocked records that the call was answered at t (c.mu held) and
// wakes the transfers waiting for it (awaitAnswer).
func (c *Call) markAnsweredLocked(t time.Time) {
	if c.answered.IsZero() {
		c.answered = t
		close(c.answeredCh)
	}
}

// bye ends an answered call from our side.
func (c *Call) bye() {
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.cfg.ByeTimeout)
	defer cancel()
	var err error
	if c.sd != nil {
		err = c.sd.Bye(ctx)
	} else {
		err = c.cd.Bye(ctx)
	}
	if err != nil {
		c.log.Debug("bye not confirmed", "err", err)
	}
}

// answerLocked returns our answer to offer for st, incrementing the
// origin version when it differs from the last description we sent
// (RFC 3264 section 8). Called with mu held.
func (c *Call) answerLocked(offer *sdp.Session, st sdp.Stream) []byte {
	l := sdp.Local{Addr: c.local, Direction: c.ourDir, Origin: c.origin}
	body := sdp.Answer(offer, st, l).Bytes()
	return c.versioned(body, func(o sdp.Origin) []byte { l.Origin = o; return sdp.Answer(offer, st, l).Bytes() })
}

// offerLocked returns our offer with every codec we may use.
func (c *Call) offerLocked() []byte {
	l := sdp.Local{Addr: c.local, Direction: c.ourDir, Origin: c.origin}
	body := sdp.Offer(c.codecs, l).Bytes()
	return c.versioned(body, func(o sdp.Origin) []byte { l.Origin = o; return sdp.Offer(c.codecs, l).Bytes() })
}

// versioned keeps the version when body equals the last description we
// sent, else bumps it and rebuilds. Called with mu held.
func (c *Call) versioned(body []byte, rebuild func(sdp.Origin) []byte) []byte {
	if c.lastSent == nil {
		c.lastSent = body
		return body
	}
	if string(body) == string(c.lastSent) {
		return body
	}
	c.origin.Version++
	body = rebuild(c.origin)
	c.lastSent = body
	return body
}

// currentLocked returns the last description we sent, for refreshes.
func (c *Call) currentLocked() []byte { return c.lastSent }

// apply makes st the call's stream and tells the media session.
func (c *Call) apply(st sdp.Stream, remote *sdp.Session) error {
	c.mu.Lock()
	c.stream, c.haveStream, c.lastRemote = st, true, remote
	ms := streamOf(st, c.ourDir)
	c.mu.Unlock()
	if err := c.media.Update(ms); err != nil {
		return fmt.Errorf("media update: %w", err)
	}
	return nil
}

// noteRefresh tells the call loop that the peer refreshed the session.
func (c *Call) noteRefresh() {
	select {
	case c.refresh <- struct{}{}:
	default:
	}
}

// run keeps an answered call until it ends and returns the end reason.
// After a REFER from the peer moved the conversation to a new leg, the
// call goes on with that leg: its dialog, BYE and session timers.
func (c *Call) run(maxDur time.Duration) (reason string) {
	defer c.dropMoved()
	var maxC <-chan time.Time
	if maxDur > 0 {
		t := time.NewTimer(maxDur)
		defer t.Stop()
		maxC = t.C
	}
	st := time.NewTimer(time.Hour)
	st.Stop()
	defer st.Stop()
	cur := c
	arm := func() {
		cur.mu.Lock()
		se, we := cur.se, cur.weRefresh
		cur.mu.Unlock()
		st.Stop()
		if se <= 0 {
			return
		}
		if we {
			st.Reset(se / 2)
		} else {
			// RFC 4028 section 10: BYE at the interval minus
			// min(32 s, interval/3) without a refresh.
			st.Reset(se - min(32*time.Second, se/3))
		}
	}
	arm()
	dctx := c.dialogCtx()
	for {
		select {
		case <-dctx.Done():
			if n := c.takeNext(); n != nil {
				cur, dctx = n, n.dialogCtx()
				arm()
				continue
			}
			c.mu.Lock()
			r := c.forceReason
			c.mu.Unlock()
			if r != "" {
				return r
			}
			if c.direction == Outbound {
				return ReasonCalleeHangup
			}
			return ReasonCallerHangup
		case r := <-c.hangupCh:
			c.byeLegs(cur)
			return r
		case <-maxC:
			c.byeLegs(cur)
			return ReasonTimeout
		case <-c.srv.ctx.Done():
			c.byeLegs(cur)
			return ReasonShutdown
		case <-cur.refresh:
			arm()
		case <-st.C:
			cur.mu.Lock()
			we := cur.weRefresh
			cur.mu.Unlock()
			if !we {
				c.log.Info("session expired without refresh")
				cur.bye()
				return ReasonSessionExpired
			}
			if err := cur.refreshSession(); err != nil {
				c.log.Info("session refresh failed", "err", err)
				cur.bye()
				return ReasonSessionExpired
			}
			arm()
		}
	}
}

// refreshSession sends our RFC 4028 refresh: UPDATE without a body when
// the peer allows UPDATE, else a re-INVITE with the current session.
func (c *Call) refreshSession() error {
	ctx, cancel := context.WithTimeout(c.srv.ctx, 32*time.Second)
	defer cancel()
	c.mu.Lock()
	se, allow, body := c.se, c.peerAllow, c.currentLocked()
	c.mu.Unlock()
	method := sip.INVITE
	if strings.Contains(strings.ToUpper(allow), "UPDATE") {
		method = sip.UPDATE
	}
	req := sip.NewRequest(method, c.remoteTarget())
	// We refresh, so we are the refresher of this transaction: uac.
	req.AppendHeader(sip.NewHeader("Session-Expires", fmt.Sprintf("%d;refresher=uac", int(se.Seconds()))))
	req.AppendHeader(sip.NewHeader("Supported", "timer"))
	if method == sip.INVITE {
		req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
		req.SetBody(body)
	}
	c.markBusy(true)
	defer c.markBusy(false)
	res, err := c.do(ctx, req)
	if err != nil {
		return err
	}
	if method == sip.INVITE && res.IsSuccess() {
		ack := sip.NewRequest(sip.ACK, c.remoteTarget())
		if err := c.write(ack); err != nil {
			return fmt.Errorf("ack refresh: %w", err)
		}
	}
	if !res.IsSuccess() {
		return &ResponseError{Op: string(method), Code: res.StatusCode, Reason: res.Reason}
	}
	c.acceptResponseSE(res)
	return nil
}

func (c *Call) markBusy(b bool) {
	c.mu.Lock()
	c.busy = b
	c.mu.Unlock()
}
