package sip

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/voiced/voiced/sip/sdp"
)

// supportedOptions are the option tags we implement (Require check).
var supportedOptions = []string{"timer"}

func (s *Server) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	if to := req.To(); to != nil && to.Params.Has("tag") {
		c := s.callFor(req)
		if c == nil {
			s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
			return
		}
		c.onReinvite(req, tx)
		return
	}
	if err := s.begin(); err != nil {
		code, phrase, text := 503, "Service Unavailable", "shutting down"
		if errors.Is(err, ErrNoCapacity) {
			text = "no capacity"
		}
		s.respond(req, tx, code, phrase, nil, reasonHeader(code, text), sip.NewHeader("Retry-After", "5"))
		return
	}
	defer s.end()
	s.inbound(req, tx)
}

// inbound runs an inbound call from its INVITE to its end.
func (s *Server) inbound(req *sip.Request, tx sip.ServerTransaction) {
	if err := tx.Respond(sip.NewResponseFromRequest(req, 100, "Trying", nil)); err != nil {
		return
	}
	if req.Contact() == nil {
		s.respond(req, tx, 400, "Bad Request", nil, sip.NewHeader("Warning", `399 voiced "missing Contact"`))
		return
	}
	if bad := unsupportedRequire(req); bad != "" {
		s.respond(req, tx, 420, "Bad Extension", nil, sip.NewHeader("Unsupported", bad))
		return
	}
	se := s.negotiateSE(req, 0)
	if se.tooSmall {
		s.respond(req, tx, 422, "Session Interval Too Small", nil, sip.NewHeader("Min-SE", strconv.Itoa(int(s.cfg.MinSE.Seconds()))))
		return
	}
	var offer *sdp.Session
	if body := req.Body(); len(body) > 0 {
		if ct := header(req, "Content-Type", "c"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/sdp") {
			s.respond(req, tx, 415, "Unsupported Media Type", nil, sip.NewHeader("Accept", "application/sdp"))
			return
		}
		o, err := sdp.Parse(body)
		if err != nil {
			s.respond(req, tx, 400, "Bad Request", nil, sip.NewHeader("Warning", `399 voiced "malformed SDP"`))
			return
		}
		offer = o
	}
	user := req.Recipient.User
	if user == "" {
		user = req.To().Address.User
	}
	to, from := Number(user), Number(req.From().Address.User)
	src, _ := netip.ParseAddrPort(req.Source())
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.AdmitTimeout)
	defer cancel()

	codecs := sdp.Supported()
	var route *Trunk
	if s.deps.Trunks != nil {
		it, ok, err := s.deps.Trunks.InboundTrunk(ctx, to)
		if err != nil {
			s.log.Warn("trunk lookup failed", "to", to, "err", err)
			s.respond(req, tx, 500, "Server Internal Error", nil)
			return
		}
		if ok {
			if !sourceAllowed(ctx, s.deps.Resolver, it, src.Addr()) {
				s.log.Info("call refused", "to", to, "source", src.String(), "code", 403)
				s.respond(req, tx, 403, "Forbidden", nil, reasonHeader(403, "source not allowed"))
				return
			}
			codecs, route = codecsFor(it.Codecs), it.Outbound
		}
	}
	var st sdp.Stream
	if offer != nil {
		var err error
		if st, err = sdp.Select(offer, codecs); err != nil {
			s.respond(req, tx, 488, "Not Acceptable Here", nil, sip.NewHeader("Warning", `305 voiced "incompatible media format"`),
				reasonHeader(488, "no supported codec"))
			return
		}
	}
	if s.deps.Admitter == nil {
		s.respond(req, tx, 503, "Service Unavailable", nil, reasonHeader(503, "inbound calls disabled"))
		return
	}
	tname := strings.ToUpper(req.Transport())
	adm, err := s.deps.Admitter.Admit(ctx, Arrival{To: to, From: from, Source: src, Transport: tname, SIPCallID: req.CallID().Value()})
	if err != nil {
		code, phrase, text := refusal(err)
		hdrs := []sip.Header{reasonHeader(code, text)}
		if code == 503 {
			hdrs = append(hdrs, sip.NewHeader("Retry-After", "5"))
		}
		if code == 500 {
			s.log.Warn("admission failed", "to", to, "err", err)
		} else {
			s.log.Info("call refused", "to", to, "from", from, "code", code, "cause", text)
		}
		s.respond(req, tx, code, phrase, nil, hdrs...)
		return
	}
	t := s.anyTransport(tname)
	c := s.newCall(adm.CallID, Inbound, from, to, req.CallID().Value(), t, codecs)
	c.route = route
	if offer != nil {
		c.narrowband = allG711([]sdp.Codec{st.Codec})
	}
	end := c.runInbound(ctx, req, tx, offer, st, se, adm)
	close(c.done)
	c.finish(end)
}

// runInbound answers and holds the call; it returns how it ended.
func (c *Call) runInbound(ctx context.Context, req *sip.Request, tx sip.ServerTransaction, offer *sdp.Session, st sdp.Stream, se seOffer, adm Admission) End {
	s := c.srv
	failed := func(reason, detail string, code int) End {
		return End{Status: StatusFailed, Reason: reason, Detail: detail, Code: code, At: s.now()}
	}
	dlg, err := c.tp.dua.ReadInvite(req, tx)
	if err != nil {
		// The INVITE transaction is gone: CANCEL arrived meanwhile.
		return failed(ReasonCallerHangup, "invite transaction ended before the answer: "+err.Error(), 487)
	}
	c.sd = dlg
	c.peerAllow = header(req, "Allow")
	m, err := s.deps.Media.Open(ctx, c)
	if err != nil {
		c.log.Warn("media session not opened", "err", err)
		c.reject(tx, 503, "Service Unavailable", reasonHeader(503, "media unavailable"), sip.NewHeader("Retry-After", "5"))
		return failed(ReasonMediaFailed, "media open: "+err.Error(), 503)
	}
	c.media = m
	defer m.Close()
	// In-dialog requests find the call from here on; none can come
	// before our first response with a To tag.
	key := dialogKey(c.sipCallID, tagOf(dlg.InviteRequest.To().Params), tagOf(dlg.InviteRequest.From().Params))
	s.addCall(key, c)
	defer s.removeCall(key)
	c.mu.Lock()
	c.local = s.mediaAddr(m.LocalAddr(), c.tp)
	var body []byte
	if offer != nil {
		body = c.answerLocked(offer, st)
	} else {
		// No offer: ours goes in the 200 OK, the answer comes in the ACK.
		body = c.offerLocked()
	}
	c.mu.Unlock()
	sdpType := sip.NewHeader("Content-Type", "application/sdp")

	early := s.cfg.EarlyMedia && offer != nil
	if early {
		if err := dlg.Respond(183, "Session Progress", body, sdpType); err != nil {
			return failed(ReasonCallerHangup, "183: "+err.Error(), 487)
		}
		if err := c.apply(st, offer); err != nil {
			c.reject(tx, 500, "Server Internal Error")
			return failed(ReasonMediaFailed, err.Error(), 500)
		}
	} else if err := dlg.Respond(180, "Ringing", nil); err != nil {
		return failed(ReasonCallerHangup, "180: "+err.Error(), 487)
	}
	if d := s.cfg.AnswerDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-dlg.Context().Done():
		case <-c.setup.Done():
		}
		t.Stop()
	}
	switch {
	case dlg.Context().Err() != nil:
		return failed(ReasonCallerHangup, "caller cancelled while ringing", 487)
	case c.setup.Err() != nil:
		reason := c.hangupReason()
		if reason == "" {
			reason = ReasonShutdown
		}
		c.reject(tx, 480, "Temporarily Unavailable", reasonHeader(480, reason))
		return failed(reason, "ended before the answer", 480)
	}

	res := sip.NewResponseFromRequest(dlg.InviteRequest, 200, "OK", body)
	res.AppendHeader(sdpType)
	res.AppendHeader(sip.NewHeader("Allow", allowed))
	res.AppendHeader(sip.NewHeader("Supported", "timer"))
	res.AppendHeader(sip.NewHeader("Server", s.cfg.UserAgent))
	for _, h := range se.headers() {
		res.AppendHeader(h)
	}
	c.acceptRequestSE(se)
	if err := dlg.WriteResponse(res); err != nil {
		c.mu.Lock()
		byed := c.byed
		c.mu.Unlock()
		if byed {
			// The caller's BYE overtook its ACK (they are handled
			// concurrently): the call was answered and is over.
			now := s.now()
			return End{Status: StatusCompleted, Reason: ReasonCallerHangup, At: now, Answered: now}
		}
		return failed(ReasonCallerHangup, "200 OK: "+err.Error(), 487)
	}
	c.mu.Lock()
	acked := c.acked
	c.markAnsweredLocked(s.now())
	answered := c.answered
	c.mu.Unlock()
	if !acked {
		c.log.Info("no ACK for 200 OK")
		c.bye()
		return End{Status: StatusFailed, Reason: ReasonSessionExpired, Detail: "no ACK for 200 OK", At: s.now()}
	}
	if offer != nil && !early {
		if err := c.apply(st, offer); err != nil {
			c.log.Warn("media not started", "err", err)
			c.bye()
			return End{Status: StatusCompleted, Reason: ReasonMediaFailed, Detail: err.Error(), At: s.now(), Answered: answered}
		}
	}
	c.log.Info("call answered", "from", c.from, "to", c.to)
	reason := c.run(adm.MaxDuration)
	return End{Status: StatusCompleted, Reason: reason, At: s.now(), Answered: answered}
}

// reject sends a final non-2xx answer in the early dialog. The INVITE
// transaction retransmits it until the ACK on its own; unlike sipgo's
// dialog Respond we do not wait for that ACK (up to 32 s when the
// caller is gone).
func (c *Call) reject(tx sip.ServerTransaction, code int, phrase string, hdrs ...sip.Header) {
	res := sip.NewResponseFromRequest(c.sd.InviteRequest, code, phrase, nil)
	for _, h := range hdrs {
		res.AppendHeader(h)
	}
	res.AppendHeader(sip.NewHeader("Server", c.srv.cfg.UserAgent))
	if err := tx.Respond(res); err != nil {
		c.log.Debug("response not sent", "code", code, "err", err)
	}
}

// finish records the end once, outliving the server's context.
func (c *Call) finish(e End) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.srv.ctx), 10*time.Second)
	defer cancel()
	if err := c.srv.deps.Calls.Finish(ctx, c.id, e); err != nil {
		c.log.Warn("call end not recorded", "err", err)
	}
	c.log.Info("call ended", "status", e.Status, "reason", e.Reason, "code", e.Code)
}

// mediaAddr puts an advertised IP in place of an unspecified one.
func (s *Server) mediaAddr(a netip.AddrPort, t *tport) netip.AddrPort {
	if a.Addr().IsValid() && !a.Addr().IsUnspecified() {
		return a
	}
	var ip netip.Addr
	if t != nil {
		ip = t.addr.Addr()
	}
	if h, err := netip.ParseAddr(s.advertiseHost(ip)); err == nil {
		return netip.AddrPortFrom(h, a.Port())
	}
	return a
}

func tagOf(p sip.HeaderParams) string {
	v, _ := p.Get("tag")
	return v
}

// unsupportedRequire returns the Require option tags we do not
// implement, comma-separated (RFC 3261 section 8.2.2.3).
func unsupportedRequire(req *sip.Request) string {
	var bad []string
	for _, h := range req.GetHeaders("Require") {
		for _, t := range strings.Split(h.Value(), ",") {
			t = strings.TrimSpace(t)
			ok := t == ""
			for _, s := range supportedOptions {
				ok = ok || strings.EqualFold(s, t)
			}
			if !ok {
				bad = append(bad, t)
			}
		}
	}
	return strings.Join(bad, ", ")
}
