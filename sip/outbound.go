package sip

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/voiced/voiced/sip/digest"
)

// OutboundCall is a call to place through a trunk.
type OutboundCall struct {
	// CallID is the control plane's id of the call record.
	CallID int64
	// From is the caller ID (one of the organization's numbers) and To
	// the number to call, both E.164.
	From, To string
	Trunk    Trunk
	// MaxDuration bounds the answered call (0: no limit).
	MaxDuration time.Duration
}

// Dial places an outbound call: it opens media, registers with the
// trunk first when it asks for that, and sends the INVITE. It returns
// once the INVITE is on its way; the rest (ringing, auth, answer, the
// conversation, the end) runs in a goroutine of the Server and ends with
// CallLog.Finish. An error means nothing was sent and Finish will not be
// called.
func (s *Server) Dial(ctx context.Context, o OutboundCall) error {
	transport, host, port, hop, err := o.Trunk.target()
	if err != nil {
		return err
	}
	if err := s.begin(); err != nil {
		return err
	}
	started := false
	defer func() {
		if !started {
			s.end()
		}
	}()
	t := s.anyTransport(transport)
	if t == nil {
		return fmt.Errorf("%w: no SIP listener", ErrClosed)
	}
	client, err := s.clientFor(t, transport)
	if err != nil {
		return err
	}
	if o.Trunk.Register {
		if err := s.register(ctx, o.Trunk, client, t); err != nil {
			return err
		}
	}
	c := s.newCall(o.CallID, Outbound, o.From, o.To, newCallID(), t, codecsFor(o.Trunk.Codecs))
	c.route = &o.Trunk
	m, err := s.deps.Media.Open(ctx, c)
	if err != nil {
		return fmt.Errorf("media: %w", err)
	}
	c.media = m
	c.mu.Lock()
	c.local = s.mediaAddr(m.LocalAddr(), t)
	offer := c.offerLocked()
	c.mu.Unlock()

	uri := sip.Uri{Scheme: "sip", User: o.To, Host: host, Port: port}
	if transport != "UDP" {
		uri.UriParams = sip.NewParams()
		uri.UriParams.Add("transport", strings.ToLower(transport))
	}
	req := sip.NewRequest(sip.INVITE, uri)
	from := sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: o.From, Host: host}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	to := sip.ToHeader{Address: sip.Uri{Scheme: "sip", User: o.To, Host: host}}
	cid := sip.CallIDHeader(c.sipCallID)
	contact := t.contact.Clone()
	contact.Address.User = o.From
	mf := sip.MaxForwardsHeader(70)
	req.AppendHeader(&from)
	req.AppendHeader(&to)
	req.AppendHeader(&cid)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: 1, MethodName: sip.INVITE})
	req.AppendHeader(&mf)
	req.AppendHeader(contact)
	req.AppendHeader(sip.NewHeader("P-Asserted-Identity", "<sip:"+o.From+"@"+host+">"))
	req.AppendHeader(sip.NewHeader("Allow", allowed))
	req.AppendHeader(sip.NewHeader("Supported", "timer"))
	if se := s.cfg.SessionExpires; se > 0 {
		req.AppendHeader(sip.NewHeader("Session-Expires", strconv.Itoa(int(se.Seconds()))))
		req.AppendHeader(sip.NewHeader("Min-SE", strconv.Itoa(int(s.cfg.MinSE.Seconds()))))
	}
	req.AppendHeader(sip.NewHeader("User-Agent", s.cfg.UserAgent))
	req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	req.SetBody(offer)
	req.SetTransport(transport)
	req.SetDestination(hop)

	dua := &sipgo.DialogUA{Client: client, ContactHDR: *contact}
	sess, err := dua.WriteInvite(ctx, req)
	if err != nil {
		m.Close()
		return fmt.Errorf("invite via %s: %w", hop, err)
	}
	c.cd = sess
	started = true
	go func() {
		defer s.end()
		end := c.dialOut(dua, req, sess, o)
		// Media closes first: its recording is complete when the end is
		// recorded.
		m.Close()
		close(c.done)
		c.finish(end)
	}()
	return nil
}

// clientFor returns the client that sends over transport: the
// listener's when we listen on it, else one that opens connections.
func (s *Server) clientFor(t *tport, transport string) (*sipgo.Client, error) {
	if t.name == transport {
		return t.client, nil
	}
	c, err := sipgo.NewClient(s.ua, sipgo.WithClientHostname(t.contact.Address.Host), sipgo.WithClientLogger(s.log.With("component", "sip_client")))
	if err != nil {
		return nil, fmt.Errorf("sip: client: %w", err)
	}
	return c, nil
}

func newCallID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// dialOut waits for the answer (answering digest challenges and 422 on
// the way), then holds the call; it returns how it ended.
func (c *Call) dialOut(dua *sipgo.DialogUA, req *sip.Request, sess *sipgo.DialogClientSession, o OutboundCall) End {
	s := c.srv
	failed := func(reason, detail string, code int) End {
		return End{Status: StatusFailed, Reason: reason, Detail: detail, Code: code, At: s.now()}
	}
	ring, cancel := context.WithTimeout(c.setup, s.cfg.RingTimeout)
	defer cancel()
	auths, seRetried := 0, false
	early := false
	onResponse := func(res *sip.Response) error {
		if res.StatusCode == 183 || res.StatusCode == 180 {
			if len(res.Body()) > 0 && !early {
				if err := c.acceptAnswer(res.Body()); err != nil {
					c.log.Info("early media refused", "err", err)
				} else {
					early = true
				}
			}
		}
		return nil
	}
	for {
		err := sess.WaitAnswer(ring, sipgo.AnswerOptions{OnResponse: onResponse})
		if err == nil {
			break
		}
		var de *sipgo.ErrDialogResponse
		if errors.As(err, &de) {
			res := de.Res
			code := res.StatusCode
			switch {
			case (code == 401 || code == 407) && o.Trunk.Password != "" && auths < 2:
				auths++
				next, aerr := authorize(req, res, o.Trunk)
				if aerr != nil {
					return failed(ReasonFailed, "digest: "+aerr.Error(), code)
				}
				req = next
			case code == 422 && !seRetried:
				seRetried = true
				minSE, _, ok := parseSE(header(res, "Min-SE"))
				if !ok {
					return failed(ReasonFailed, "422 without Min-SE", code)
				}
				req = retry(req)
				req.ReplaceHeader(sip.NewHeader("Session-Expires", strconv.Itoa(int(minSE.Seconds()))))
				req.ReplaceHeader(sip.NewHeader("Min-SE", strconv.Itoa(int(minSE.Seconds()))))
			default:
				return failed(outcome(code), res.StartLine(), code)
			}
			if sess, err = dua.WriteInvite(ring, req); err != nil {
				return failed(ReasonFailed, "invite: "+err.Error(), 0)
			}
			c.mu.Lock()
			c.cd = sess
			c.mu.Unlock()
			continue
		}
		// The ring context ended: WaitAnswer sent CANCEL. A 200 that
		// crossed the CANCEL still makes a dialog, which we end at once.
		if r := sess.InviteResponse; r != nil && r.IsSuccess() {
			sess.Ack(context.Background())
			c.bye()
		}
		switch {
		case c.setup.Err() != nil:
			reason := c.hangupReason()
			if reason == "" {
				reason = ReasonShutdown
			}
			return failed(reason, "ended while ringing", 487)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(ring.Err(), context.DeadlineExceeded):
			return failed(ReasonNoAnswer, "ring timeout", 487)
		}
		return failed(ReasonFailed, err.Error(), 0)
	}
	res := sess.InviteResponse
	if err := sess.Ack(context.Background()); err != nil {
		return failed(ReasonFailed, "ack: "+err.Error(), 0)
	}
	c.mu.Lock()
	c.markAnsweredLocked(s.now())
	c.acked, c.peerAllow = true, header(res, "Allow")
	answered := c.answered
	c.mu.Unlock()
	key := dialogKey(c.sipCallID, tagOf(req.From().Params), tagOf(res.To().Params))
	s.addCall(key, c)
	defer s.removeCall(key)
	if len(res.Body()) > 0 {
		if err := c.acceptAnswer(res.Body()); err != nil {
			c.log.Info("answer refused", "err", err)
			c.bye()
			return End{Status: StatusCompleted, Reason: ReasonMediaFailed, Detail: "answer: " + err.Error(), At: s.now(), Answered: answered}
		}
	} else if !early {
		c.bye()
		return End{Status: StatusCompleted, Reason: ReasonMediaFailed, Detail: "2xx without SDP", At: s.now(), Answered: answered}
	}
	c.acceptResponseSE(res)
	c.log.Info("call answered", "from", c.from, "to", c.to)
	if a, ok := c.media.(Answerer); ok {
		a.Answered(answered)
	}
	reason := c.run(o.MaxDuration)
	return End{Status: StatusCompleted, Reason: reason, At: s.now(), Answered: answered}
}

// outcome maps the final response of an unanswered INVITE to the end
// reason.
func outcome(code int) string {
	switch code {
	case 486, 600:
		return ReasonBusy
	case 603, 607, 608:
		return ReasonRejected
	case 408, 480, 487:
		return ReasonNoAnswer
	}
	return ReasonFailed
}

// retry clones req for a new transaction: new Via (added when sent),
// next CSeq.
func retry(req *sip.Request) *sip.Request {
	n := req.Clone()
	n.RemoveHeader("Via")
	n.CSeq().SeqNo++
	return n
}

// authorize answers the digest challenge of res with credentials for
// tr, returning the request to send next.
func authorize(req *sip.Request, res *sip.Response, tr Trunk) (*sip.Request, error) {
	chName, crName := "WWW-Authenticate", "Authorization"
	if res.StatusCode == 407 {
		chName, crName = "Proxy-Authenticate", "Proxy-Authorization"
	}
	var vals []string
	for _, h := range res.GetHeaders(chName) {
		vals = append(vals, h.Value())
	}
	ch, err := digest.Pick(vals)
	if err != nil {
		return nil, err
	}
	user := tr.Username
	if user == "" {
		user = req.From().Address.User
	}
	cr, err := digest.Respond(ch, digest.Options{Method: string(req.Method), URI: req.Recipient.String(), Username: user, Password: tr.Password})
	if err != nil {
		return nil, err
	}
	n := retry(req)
	n.RemoveHeader(crName)
	n.AppendHeader(sip.NewHeader(crName, cr.String()))
	return n, nil
}
