package sip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// A leg is a second dialog of a call: the INVITE a transfer places
// through the call's route (the trunk of its VoIP connection) when it
// bridges the caller (bridge.go) or when the peer's REFER moves the
// conversation (refer.go). It is a *Call with the same id and an owner,
// so in-dialog requests find it; it never records an end of its own.

// Transfer target errors: a malformed target, one the node will not dial
// (not through the call's route), and a call without a route.
var (
	errBadTarget   = errors.New("sip: malformed transfer target")
	errNotRoutable = errors.New("sip: transfer target is not reachable through the call's trunk")
	errNoRoute     = errors.New("sip: the call has no outbound route (no VoIP connection)")
)

// dialUser returns what to dial through the call's route for a transfer
// target: an E.164 number or digits (the user part of the Request-URI),
// from a number, a tel: URI or a sip:/sips: URI whose host is the trunk's
// host or outbound proxy or the peer of the call. The node never dials
// other hosts: a transfer only reaches what the trunk reaches.
func (c *Call) dialUser(target string) (string, error) {
	if c.route == nil {
		return "", errNoRoute
	}
	target = strings.TrimSpace(strings.Trim(strings.TrimSpace(target), "<>"))
	low := strings.ToLower(target)
	user := target
	switch {
	case strings.HasPrefix(low, "sip:") || strings.HasPrefix(low, "sips:"):
		var u sip.Uri
		if err := sip.ParseUri(target, &u); err != nil || u.Host == "" {
			return "", fmt.Errorf("%w: %q", errBadTarget, target)
		}
		if !c.routeHost(u.Host) {
			return "", fmt.Errorf("%w: host %s", errNotRoutable, u.Host)
		}
		user = u.User
	case strings.HasPrefix(low, "tel:"):
		user, _, _ = strings.Cut(target[4:], ";")
	}
	user = strings.NewReplacer("-", "", ".", "", "(", "", ")", "", " ", "").Replace(user)
	if n := strings.TrimPrefix(user, "+"); n == "" || len(n) > 32 || strings.Trim(n, "0123456789*#") != "" {
		return "", fmt.Errorf("%w: %q is not a number", errBadTarget, target)
	}
	return user, nil
}

// routeHost reports whether a Refer-To host is the trunk (host or
// outbound proxy) or the peer of the call.
func (c *Call) routeHost(h string) bool {
	same := func(a, b string) bool {
		if a == "" || b == "" {
			return false
		}
		if host, _, err := net.SplitHostPort(b); err == nil {
			b = host
		}
		a, b = strings.Trim(a, "[]"), strings.Trim(b, "[]")
		if x, err := netip.ParseAddr(a); err == nil {
			if y, err := netip.ParseAddr(b); err == nil {
				return x.Unmap() == y.Unmap()
			}
		}
		return strings.EqualFold(a, b)
	}
	rt := c.remoteTarget()
	return same(h, c.route.Host) || same(h, c.route.OutboundProxy) || same(h, rt.Host)
}

// ourNumber is the caller ID a leg presents: our number in the call.
func (c *Call) ourNumber() string {
	if c.direction == Inbound {
		return c.to
	}
	return c.from
}

// newLeg prepares a leg of c to user; the caller gives it media (leg.media
// and the address for its SDP) and dials it with invite.
func (c *Call) newLeg(user string) (*Call, error) {
	if c.route == nil {
		return nil, errNoRoute
	}
	transport, _, _, _, err := c.route.target()
	if err != nil {
		return nil, err
	}
	t := c.srv.anyTransport(transport)
	if t == nil {
		return nil, fmt.Errorf("%w: no SIP listener", ErrClosed)
	}
	leg := c.srv.newCall(c.id, Outbound, c.ourNumber(), user, newCallID(), t, codecsFor(c.route.Codecs))
	leg.owner, leg.route = c, c.route
	leg.log = c.log.With("leg_sip_call_id", leg.sipCallID, "leg_to", user)
	return leg, nil
}

// invite places the leg (media set, local its RTP address): INVITE
// through the trunk with our offer, digest auth and 422 answered, up to
// the ring timeout or ctx. On an answer it ACKs, applies the SDP answer
// to the leg's media and registers the leg for in-dialog requests. A
// final failure is a *ResponseError with the SIP status.
func (leg *Call) invite(ctx context.Context, local netip.AddrPort) error {
	s, tr := leg.srv, *leg.route
	transport, host, port, hop, err := tr.target()
	if err != nil {
		return err
	}
	client, err := s.clientFor(leg.tp, transport)
	if err != nil {
		return err
	}
	leg.mu.Lock()
	leg.local = s.mediaAddr(local, leg.tp)
	offer := leg.offerLocked()
	leg.mu.Unlock()
	from := leg.from
	uri := sip.Uri{Scheme: "sip", User: leg.to, Host: host, Port: port}
	if transport != "UDP" {
		uri.UriParams = sip.NewParams()
		uri.UriParams.Add("transport", strings.ToLower(transport))
	}
	req := sip.NewRequest(sip.INVITE, uri)
	fh := sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: from, Host: host}, Params: sip.NewParams()}
	fh.Params.Add("tag", sip.GenerateTagN(16))
	cid := sip.CallIDHeader(leg.sipCallID)
	contact := leg.tp.contact.Clone()
	contact.Address.User = from
	mf := sip.MaxForwardsHeader(70)
	req.AppendHeader(&fh)
	req.AppendHeader(&sip.ToHeader{Address: sip.Uri{Scheme: "sip", User: leg.to, Host: host}})
	req.AppendHeader(&cid)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: 1, MethodName: sip.INVITE})
	req.AppendHeader(&mf)
	req.AppendHeader(contact)
	req.AppendHeader(sip.NewHeader("P-Asserted-Identity", "<sip:"+from+"@"+host+">"))
	req.AppendHeader(sip.NewHeader("Allow", allowed))
	req.AppendHeader(sip.NewHeader("User-Agent", s.cfg.UserAgent))
	req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	req.SetBody(offer)
	req.SetTransport(transport)
	req.SetDestination(hop)

	ring, cancel := context.WithTimeout(ctx, s.cfg.RingTimeout)
	defer cancel()
	dua := &sipgo.DialogUA{Client: client, ContactHDR: *contact}
	sess, err := dua.WriteInvite(ring, req)
	if err != nil {
		return fmt.Errorf("invite via %s: %w", hop, err)
	}
	for auths := 0; ; {
		err := sess.WaitAnswer(ring, sipgo.AnswerOptions{})
		if err == nil {
			break
		}
		var de *sipgo.ErrDialogResponse
		if !errors.As(err, &de) {
			// Ring timeout or ctx: WaitAnswer sent CANCEL. A 200 that
			// crossed it still makes a dialog, which we end at once.
			if r := sess.InviteResponse; r != nil && r.IsSuccess() {
				sess.Ack(context.Background())
				leg.cd = sess
				leg.bye()
			}
			if ring.Err() != nil && ctx.Err() == nil {
				return &ResponseError{Op: "transfer leg", Code: 408, Reason: "no answer"}
			}
			return fmt.Errorf("transfer leg: %w", err)
		}
		code := de.Res.StatusCode
		if (code != 401 && code != 407) || tr.Password == "" || auths == 2 {
			return &ResponseError{Op: "transfer leg", Code: code, Reason: de.Res.Reason}
		}
		auths++
		if req, err = authorize(req, de.Res, tr); err != nil {
			return fmt.Errorf("transfer leg digest: %w", err)
		}
		if sess, err = dua.WriteInvite(ring, req); err != nil {
			return fmt.Errorf("invite via %s: %w", hop, err)
		}
	}
	res := sess.InviteResponse
	leg.cd = sess
	if err := sess.Ack(context.Background()); err != nil {
		return fmt.Errorf("transfer leg ack: %w", err)
	}
	leg.mu.Lock()
	leg.markAnsweredLocked(s.now())
	leg.acked, leg.peerAllow = true, header(res, "Allow")
	leg.key = dialogKey(leg.sipCallID, tagOf(req.From().Params), tagOf(res.To().Params))
	leg.mu.Unlock()
	s.addCall(leg.key, leg)
	if err := leg.acceptAnswer(res.Body()); err != nil {
		s.removeCall(leg.key)
		leg.bye()
		return fmt.Errorf("transfer leg answer: %w", err)
	}
	leg.acceptResponseSE(res)
	leg.log.Info("transfer leg answered", "status", strconv.Itoa(res.StatusCode))
	return nil
}
