package sip

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/emiago/sipgo/sip"

	"github.com/voiced/voiced/sip/sdp"
)

func (s *Server) onAck(req *sip.Request, tx sip.ServerTransaction) {
	c := s.callFor(req)
	if c == nil {
		return // ACKs are never answered
	}
	c.onAck(req, tx)
}

func (c *Call) onAck(req *sip.Request, tx sip.ServerTransaction) {
	c.mu.Lock()
	wait := c.ackWait
	c.ackWait = nil
	initial := c.sd != nil && !c.acked && req.CSeq().SeqNo == c.sd.InviteRequest.CSeq().SeqNo
	if initial {
		c.acked = true
	}
	c.mu.Unlock()
	if wait != nil {
		// ACK of a 2xx to a re-INVITE: its body (if any) answers the
		// offer we made in that 2xx.
		wait <- req
		return
	}
	if !initial {
		return
	}
	if len(req.Body()) > 0 && !c.haveStreamNow() {
		if err := c.acceptAnswer(req.Body()); err != nil {
			c.log.Info("answer in ACK refused", "err", err)
			c.hangup(ReasonMediaFailed)
		}
	}
	if err := c.sd.ReadAck(req, tx); err != nil {
		c.log.Debug("ack not matched", "err", err)
	}
}

func (c *Call) haveStreamNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.haveStream
}

// acceptAnswer applies an SDP answer to an offer of ours.
func (c *Call) acceptAnswer(body []byte) error {
	ans, err := sdp.Parse(body)
	if err != nil {
		return err
	}
	st, err := sdp.Select(ans, c.codecs)
	if err != nil {
		return err
	}
	return c.apply(st, ans)
}

func (s *Server) onBye(req *sip.Request, tx sip.ServerTransaction) {
	c := s.callFor(req)
	if c == nil {
		s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	}
	c.mu.Lock()
	c.byed = true
	c.mu.Unlock()
	var err error
	if c.sd != nil {
		err = c.sd.ReadBye(req, tx)
	} else {
		err = c.cd.ReadBye(req, tx)
	}
	if err != nil {
		s.respond(req, tx, 500, "Server Internal Error", nil)
	}
}

// checkCSeq enforces RFC 3261 section 12.2.2: a lower CSeq than the
// last one is answered 500.
func (c *Call) checkCSeq(req *sip.Request, tx sip.ServerTransaction) bool {
	var err error
	if c.sd != nil {
		err = c.sd.ReadRequest(req, tx)
	} else {
		err = c.cd.ReadRequest(req, tx)
	}
	if err != nil {
		c.srv.respond(req, tx, 500, "Server Internal Error", nil, sip.NewHeader("Retry-After", "1"))
		return false
	}
	return true
}

// begin marks an offer/answer exchange in progress; a second one
// overlapping it gets 491 (RFC 3261 section 14.2).
func (c *Call) beginExchange(req *sip.Request, tx sip.ServerTransaction) bool {
	c.mu.Lock()
	busy := c.busy || c.answered.IsZero()
	if !busy {
		c.busy = true
	}
	c.mu.Unlock()
	if busy {
		c.srv.respond(req, tx, 491, "Request Pending", nil, sip.NewHeader("Retry-After", "1"))
	}
	return !busy
}

// onReinvite answers a re-INVITE: a new offer (hold, unhold, codec or
// address change), or none (we offer, the ACK answers), and the session
// refresh either way.
func (c *Call) onReinvite(req *sip.Request, tx sip.ServerTransaction) {
	if !c.checkCSeq(req, tx) || !c.beginExchange(req, tx) {
		return
	}
	defer c.markBusy(false)
	body, ok := c.offerAnswer(req, tx)
	if !ok {
		return
	}
	se := c.srv.negotiateSE(req, c.interval())
	if se.tooSmall {
		c.srv.respond(req, tx, 422, "Session Interval Too Small", nil, sip.NewHeader("Min-SE", strconv.Itoa(int(c.srv.cfg.MinSE.Seconds()))))
		return
	}
	res := sip.NewResponseFromRequest(req, 200, "OK", body)
	res.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	res.AppendHeader(&c.tp.contact)
	res.AppendHeader(sip.NewHeader("Allow", allowed))
	res.AppendHeader(sip.NewHeader("Supported", "timer"))
	for _, h := range se.headers() {
		res.AppendHeader(h)
	}
	ack := make(chan *sip.Request, 1)
	c.mu.Lock()
	c.ackWait = ack
	c.mu.Unlock()
	c.acceptRequestSE(se)
	if err := tx.Respond(res); err != nil {
		return
	}
	// We retransmit the 2xx until the ACK (RFC 6026 leaves it to us).
	interval, total := sip.T1, time.Duration(0)
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case a := <-ack:
			if len(req.Body()) == 0 {
				if err := c.acceptAnswer(a.Body()); err != nil {
					c.log.Info("answer in ACK refused", "err", err)
					c.hangup(ReasonMediaFailed)
				}
			}
			return
		case <-t.C:
			total += interval
			if total >= 64*sip.T1 {
				c.mu.Lock()
				c.ackWait = nil
				c.mu.Unlock()
				c.log.Info("no ACK for re-INVITE 200 OK")
				c.hangup(ReasonSessionExpired)
				return
			}
			if strings.EqualFold(req.Transport(), "UDP") {
				tx.Respond(res)
			}
			interval = min(2*interval, sip.T2)
			t.Reset(interval)
		case <-c.done:
			return
		}
	}
}

func (c *Call) interval() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.se
}

// offerAnswer handles the SDP of a re-INVITE or UPDATE: with an offer it
// answers it (488 when nothing is acceptable, the session unchanged);
// without one it returns our offer (re-INVITE) or our current session
// (UPDATE refresh). ok is false when a response was sent.
func (c *Call) offerAnswer(req *sip.Request, tx sip.ServerTransaction) (body []byte, ok bool) {
	b := req.Body()
	if len(b) == 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		if req.Method == sip.UPDATE {
			return nil, true
		}
		return c.offerLocked(), true
	}
	if ct := header(req, "Content-Type", "c"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/sdp") {
		c.srv.respond(req, tx, 415, "Unsupported Media Type", nil, sip.NewHeader("Accept", "application/sdp"))
		return nil, false
	}
	offer, err := sdp.Parse(b)
	if err != nil {
		c.srv.respond(req, tx, 400, "Bad Request", nil, sip.NewHeader("Warning", `399 voiced "malformed SDP"`))
		return nil, false
	}
	st, err := sdp.Select(offer, c.codecs)
	if err != nil {
		c.srv.respond(req, tx, 488, "Not Acceptable Here", nil, sip.NewHeader("Warning", `305 voiced "incompatible media format"`))
		return nil, false
	}
	c.mu.Lock()
	body = c.answerLocked(offer, st)
	c.mu.Unlock()
	if err := c.apply(st, offer); err != nil {
		c.log.Warn("media update failed", "err", err)
		c.srv.respond(req, tx, 500, "Server Internal Error", nil)
		return nil, false
	}
	if st.Hold() {
		c.log.Info("call held by peer", "direction", st.Direction.String())
	}
	return body, true
}

func (s *Server) onUpdate(req *sip.Request, tx sip.ServerTransaction) {
	c := s.callFor(req)
	if c == nil {
		s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	}
	if !c.checkCSeq(req, tx) || !c.beginExchange(req, tx) {
		return
	}
	defer c.markBusy(false)
	body, ok := c.offerAnswer(req, tx)
	if !ok {
		return
	}
	se := s.negotiateSE(req, c.interval())
	if se.tooSmall {
		s.respond(req, tx, 422, "Session Interval Too Small", nil, sip.NewHeader("Min-SE", strconv.Itoa(int(s.cfg.MinSE.Seconds()))))
		return
	}
	hdrs := append(se.headers(), &c.tp.contact, sip.NewHeader("Supported", "timer"))
	if body != nil {
		hdrs = append(hdrs, sip.NewHeader("Content-Type", "application/sdp"))
	}
	c.acceptRequestSE(se)
	s.respond(req, tx, 200, "OK", body, hdrs...)
}

// onInfo takes DTMF from SIP INFO: application/dtmf-relay
// ("Signal=5\r\nDuration=160") or application/dtmf ("5"). An empty INFO
// is a keepalive and gets 200.
func (s *Server) onInfo(req *sip.Request, tx sip.ServerTransaction) {
	c := s.callFor(req)
	if c == nil {
		s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	}
	if !c.checkCSeq(req, tx) {
		return
	}
	body := req.Body()
	if len(body) == 0 {
		s.respond(req, tx, 200, "OK", nil)
		return
	}
	ct := strings.ToLower(strings.TrimSpace(header(req, "Content-Type", "c")))
	var digit rune
	dur := 160 * time.Millisecond
	var err error
	switch {
	case strings.HasPrefix(ct, "application/dtmf-relay"):
		digit, dur, err = parseDTMFRelay(string(body))
	case strings.HasPrefix(ct, "application/dtmf"):
		digit, err = parseDigit(strings.TrimSpace(string(body)))
	default:
		s.respond(req, tx, 415, "Unsupported Media Type", nil, sip.NewHeader("Accept", "application/dtmf-relay, application/dtmf"))
		return
	}
	if err != nil {
		s.respond(req, tx, 400, "Bad Request", nil, sip.NewHeader("Warning", `399 voiced "bad DTMF body"`))
		return
	}
	if r, ok := c.media.(DTMFReceiver); ok {
		r.DTMF(digit, dur)
	}
	s.respond(req, tx, 200, "OK", nil)
}

var errBadDTMF = errors.New("sip: bad DTMF")

func parseDTMFRelay(body string) (rune, time.Duration, error) {
	var digit rune
	dur := 160 * time.Millisecond
	found := false
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r", ""), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch k {
		case "signal":
			d, err := parseDigit(v)
			if err != nil {
				return 0, 0, err
			}
			digit, found = d, true
		case "duration":
			if ms, err := strconv.Atoi(v); err == nil && ms > 0 && ms < 60000 {
				dur = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if !found {
		return 0, 0, errBadDTMF
	}
	return digit, dur, nil
}

// parseDigit reads one DTMF digit: 0-9, *, #, A-D, or the event codes
// 10 and 11 some phones send for * and #.
func parseDigit(v string) (rune, error) {
	switch v {
	case "10":
		return '*', nil
	case "11":
		return '#', nil
	}
	if len(v) != 1 {
		return 0, errBadDTMF
	}
	r := unicode.ToUpper(rune(v[0]))
	if (r >= '0' && r <= '9') || r == '*' || r == '#' || (r >= 'A' && r <= 'D') {
		return r, nil
	}
	return 0, errBadDTMF
}

// onNotify takes the NOTIFYs of a REFER's implicit subscription (RFC
// 3515 section 2.4.4): their message/sipfrag bodies report the
// transfer's progress.
func (s *Server) onNotify(req *sip.Request, tx sip.ServerTransaction) {
	c := s.callFor(req)
	if c == nil {
		s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	}
	ev := strings.ToLower(strings.TrimSpace(header(req, "Event", "o")))
	if !strings.HasPrefix(ev, "refer") {
		s.respond(req, tx, 489, "Bad Event", nil)
		return
	}
	s.respond(req, tx, 200, "OK", nil)
	code := sipfragCode(req.Body())
	terminated := strings.HasPrefix(strings.ToLower(header(req, "Subscription-State")), "terminated")
	if code == 0 && terminated {
		code = -1 // ended without a final status
	}
	c.mu.Lock()
	ch := c.notify
	c.mu.Unlock()
	if ch != nil && code != 0 {
		select {
		case ch <- code:
		default:
		}
	}
}

// sipfragCode reads the status code of a message/sipfrag body
// ("SIP/2.0 200 OK"), 0 when there is none.
func sipfragCode(b []byte) int {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "SIP/") {
		return 0
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 100 || n > 699 {
		return 0
	}
	return n
}
