package sip

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// An incoming REFER (RFC 3515) inside a call's dialog asks us to
// transfer: the peer (a PBX, a carrier's transfer feature) wants the
// conversation to go on with the Refer-To target. We accept with 202,
// report 100 Trying by NOTIFY, place the INVITE through the call's route
// (the same trunk, never another host), report its final status by
// NOTIFY, and on success move the conversation: the call's media (the
// agent) now talks to the new leg, and the old dialog gets BYE. The call
// record stays one call (docs/decisions.md, "Incoming REFER").

// onRefer answers a REFER: 481 outside a dialog, 403 when the call has
// no outbound route, the target is not reachable through it or the
// dialog is not the conversation's, 400 for a missing, repeated or
// malformed Refer-To, 501 for an attended transfer (Replaces), 491 while
// another transfer runs, else 202 and the transfer runs on its own.
func (s *Server) onRefer(req *sip.Request, tx sip.ServerTransaction) {
	d := s.callFor(req)
	if d == nil {
		s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	}
	if !d.checkCSeq(req, tx) {
		return
	}
	owner := d
	if d.owner != nil {
		owner = d.owner
	}
	warn := func(code int, phrase, text string) {
		s.respond(req, tx, code, phrase, nil, sip.NewHeader("Warning", `399 voiced "`+text+`"`))
	}
	var vals []string
	for _, name := range []string{"Refer-To", "r"} {
		for _, h := range req.GetHeaders(name) {
			vals = append(vals, h.Value())
		}
	}
	if len(vals) != 1 {
		warn(400, "Bad Request", "exactly one Refer-To is required")
		return
	}
	target, headers := referTarget(vals[0])
	if target == "" {
		warn(400, "Bad Request", "malformed Refer-To")
		return
	}
	if strings.Contains(strings.ToLower(headers), "replaces") {
		warn(501, "Not Implemented", "attended transfer (Replaces) is not supported")
		return
	}
	d.mu.Lock()
	unanswered := d.answered.IsZero()
	d.mu.Unlock()
	if owner.current() != d || unanswered {
		warn(403, "Forbidden", "not the call's conversation")
		return
	}
	user, err := owner.dialUser(target)
	switch {
	case errors.Is(err, errNoRoute):
		warn(403, "Forbidden", "the call has no outbound route")
		return
	case errors.Is(err, errNotRoutable):
		warn(403, "Forbidden", "target not reachable through the call's trunk")
		return
	case err != nil:
		warn(400, "Bad Request", "malformed Refer-To")
		return
	}
	owner.mu.Lock()
	busy := owner.moving || owner.bridged != nil || owner.ended
	if !busy {
		owner.moving = true
	}
	owner.mu.Unlock()
	if busy {
		s.respond(req, tx, 491, "Request Pending", nil, sip.NewHeader("Retry-After", "2"))
		return
	}
	s.respond(req, tx, 202, "Accepted", nil, &d.tp.contact)
	d.log.Info("REFER accepted", "target", target)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		owner.followRefer(d, user)
	}()
}

// referTarget splits a Refer-To value into its URI without URI headers
// and those headers ("Replaces=..."); an empty URI when malformed.
func referTarget(v string) (uri, headers string) {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '<'); i >= 0 {
		j := strings.IndexByte(v[i:], '>')
		if j < 0 {
			return "", ""
		}
		v = v[i+1 : i+j]
	} else if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	v, headers, _ = strings.Cut(strings.TrimSpace(v), "?")
	low := strings.ToLower(v)
	if !strings.HasPrefix(low, "sip:") && !strings.HasPrefix(low, "sips:") && !strings.HasPrefix(low, "tel:") {
		return "", ""
	}
	return v, headers
}

// followRefer places the leg a REFER on dialog d asked for and reports
// it to d by NOTIFY; on an answer the conversation moves to the leg and
// d gets BYE.
func (c *Call) followRefer(d *Call, user string) {
	defer func() {
		c.mu.Lock()
		c.moving = false
		c.mu.Unlock()
	}()
	d.notifyRefer("SIP/2.0 100 Trying", false)
	leg, err := c.newLeg(user)
	if err != nil {
		c.log.Warn("REFER leg not placed", "err", err)
		d.notifyRefer("SIP/2.0 503 Service Unavailable", true)
		return
	}
	leg.media = c.media
	c.mu.Lock()
	local := c.local
	c.mu.Unlock()
	// setup ends when the call is hung up: the ringing leg is cancelled.
	if err := leg.invite(c.setup, local); err != nil {
		code, reason := 503, "Service Unavailable"
		var re *ResponseError
		if errors.As(err, &re) && re.Code >= 300 {
			code, reason = re.Code, re.Reason
		}
		c.log.Info("REFER leg failed", "err", err)
		d.notifyRefer("SIP/2.0 "+strconv.Itoa(code)+" "+reason, true)
		return
	}
	c.mu.Lock()
	gone := c.ended || c.hungUp != ""
	if !gone {
		c.next = leg
		c.moved = append(c.moved, leg)
	}
	c.mu.Unlock()
	if gone {
		c.srv.removeCall(leg.key)
		leg.bye()
		d.notifyRefer("SIP/2.0 487 Request Terminated", true)
		return
	}
	d.notifyRefer("SIP/2.0 200 OK", true)
	c.log.Info("conversation moved to the REFER target", "to", user)
	d.bye()
}

// notifyRefer sends a NOTIFY of the REFER's implicit subscription with a
// message/sipfrag status line; final terminates the subscription.
func (c *Call) notifyRefer(frag string, final bool) {
	req := sip.NewRequest(sip.NOTIFY, c.remoteTarget())
	req.AppendHeader(sip.NewHeader("Event", "refer"))
	state := "active;expires=60"
	if final {
		state = "terminated;reason=noresource"
	}
	req.AppendHeader(sip.NewHeader("Subscription-State", state))
	req.AppendHeader(c.tp.contact.Clone())
	req.AppendHeader(sip.NewHeader("Content-Type", "message/sipfrag;version=2.0"))
	req.SetBody([]byte(frag + "\r\n"))
	ctx, cancel := context.WithTimeout(c.srv.ctx, 10*time.Second)
	defer cancel()
	res, err := c.do(ctx, req)
	switch {
	case err != nil:
		c.log.Info("REFER NOTIFY not delivered", "status", frag, "err", err)
	case !res.IsSuccess():
		c.log.Info("REFER NOTIFY refused", "status", frag, "code", res.StatusCode)
	}
}

// takeNext returns the leg the conversation moved to since the last
// call, if any.
func (c *Call) takeNext() *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.next
	c.next = nil
	return n
}

// byeLegs ends the conversation's dialog cur, and a leg it is moving to.
func (c *Call) byeLegs(cur *Call) {
	cur.bye()
	if n := c.takeNext(); n != nil {
		n.bye()
	}
}

// dropMoved marks the call ended and forgets the legs it moved to.
func (c *Call) dropMoved() {
	c.mu.Lock()
	c.ended = true
	legs := c.moved
	c.mu.Unlock()
	for _, l := range legs {
		c.srv.removeCall(l.key)
	}
}
