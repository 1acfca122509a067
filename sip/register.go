package sip

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// registration keeps one REGISTER binding with a trunk fresh until the
// Server closes, then removes it (Expires: 0).
type registration struct {
	srv     *Server
	trunk   Trunk
	client  *sipgo.Client
	contact sip.ContactHeader
	callID  string
	cseq    uint32

	mu    sync.Mutex
	until time.Time

	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
}

func regKey(tr Trunk) string {
	return strings.ToLower(tr.Transport) + "|" + tr.Host + "|" + strconv.Itoa(tr.Port) + "|" + tr.OutboundProxy + "|" + tr.Username
}

// register makes sure a binding with tr exists, registering (and
// starting its refresher) when there is none or it lapsed.
func (s *Server) register(ctx context.Context, tr Trunk, client *sipgo.Client, t *tport) error {
	if tr.Username == "" {
		return fmt.Errorf("%w: REGISTER needs a username", ErrBadTrunk)
	}
	key := regKey(tr)
	s.mu.Lock()
	r := s.regs[key]
	if r == nil {
		if s.closing {
			s.mu.Unlock()
			return ErrClosed
		}
		contact := t.contact.Clone()
		contact.Address.User = tr.Username
		r = &registration{srv: s, trunk: tr, client: client, contact: *contact, callID: newCallID(), quit: make(chan struct{}), done: make(chan struct{})}
		s.regs[key] = r
		s.wg.Go(r.refresher)
	}
	s.mu.Unlock()
	r.mu.Lock()
	valid := s.now().Before(r.until)
	r.mu.Unlock()
	if valid {
		return nil
	}
	if _, err := r.send(ctx, s.cfg.RegisterExpires); err != nil {
		return fmt.Errorf("register with %s: %w", tr.Host, err)
	}
	return nil
}

// refresher re-registers at half the granted lifetime (retrying every
// 30 s after a failure) and unregisters on stop.
func (r *registration) refresher() {
	defer close(r.done)
	for {
		r.mu.Lock()
		wait := r.until.Sub(r.srv.now()) / 2
		r.mu.Unlock()
		if wait < 30*time.Second {
			wait = 30 * time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-r.quit:
			t.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			r.send(ctx, 0)
			cancel()
			return
		case <-t.C:
		}
		r.mu.Lock()
		due := !r.until.IsZero()
		r.mu.Unlock()
		if !due {
			continue // never registered yet: register() does it on demand
		}
		ctx, cancel := context.WithTimeout(context.Background(), 32*time.Second)
		if _, err := r.send(ctx, r.srv.cfg.RegisterExpires); err != nil {
			r.srv.log.Warn("registration refresh failed", "host", r.trunk.Host, "err", err)
		}
		cancel()
	}
}

func (r *registration) stop() {
	r.stopOnce.Do(func() { close(r.quit) })
	<-r.done
}

// send sends one REGISTER (answering a digest challenge) and returns the
// lifetime the registrar granted.
func (r *registration) send(ctx context.Context, expires time.Duration) (time.Duration, error) {
	transport, host, port, hop, err := r.trunk.target()
	if err != nil {
		return 0, err
	}
	uri := sip.Uri{Scheme: "sip", Host: host, Port: port}
	if transport != "UDP" {
		uri.UriParams = sip.NewParams()
		uri.UriParams.Add("transport", strings.ToLower(transport))
	}
	req := sip.NewRequest(sip.REGISTER, uri)
	aor := sip.Uri{Scheme: "sip", User: r.trunk.Username, Host: host}
	from := sip.FromHeader{Address: aor, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	to := sip.ToHeader{Address: aor}
	cid := sip.CallIDHeader(r.callID)
	r.mu.Lock()
	r.cseq++
	seq := r.cseq
	r.mu.Unlock()
	contact := r.contact
	mf := sip.MaxForwardsHeader(70)
	req.AppendHeader(&from)
	req.AppendHeader(&to)
	req.AppendHeader(&cid)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: seq, MethodName: sip.REGISTER})
	req.AppendHeader(&mf)
	req.AppendHeader(&contact)
	req.AppendHeader(sip.NewHeader("Expires", strconv.Itoa(int(expires.Seconds()))))
	req.AppendHeader(sip.NewHeader("User-Agent", r.srv.cfg.UserAgent))
	req.SetTransport(transport)
	req.SetDestination(hop)
	res, err := r.client.Do(ctx, req)
	for tries := 0; err == nil && (res.StatusCode == 401 || res.StatusCode == 407) && r.trunk.Password != "" && tries < 2; tries++ {
		if req, err = authorize(req, res, r.trunk); err != nil {
			return 0, err
		}
		r.mu.Lock()
		r.cseq = req.CSeq().SeqNo
		r.mu.Unlock()
		res, err = r.client.Do(ctx, req, sipgo.ClientRequestAddVia)
	}
	if err != nil {
		return 0, err
	}
	if !res.IsSuccess() {
		return 0, &ResponseError{Op: "REGISTER", Code: res.StatusCode, Reason: res.Reason}
	}
	granted := expires
	if v, err := strconv.Atoi(strings.TrimSpace(header(res, "Expires"))); err == nil && v >= 0 {
		granted = time.Duration(v) * time.Second
	}
	for _, h := range res.GetHeaders("Contact") {
		if ch, ok := h.(*sip.ContactHeader); ok && ch.Address.User == r.contact.Address.User {
			if v, ok := ch.Params.Get("expires"); ok {
				if n, err := strconv.Atoi(v); err == nil {
					granted = time.Duration(n) * time.Second
				}
			}
		}
	}
	r.mu.Lock()
	if expires == 0 {
		r.until = time.Time{}
	} else {
		r.until = r.srv.now().Add(granted)
	}
	r.mu.Unlock()
	if expires > 0 && granted <= 0 {
		return 0, errors.New("registrar granted no lifetime")
	}
	return granted, nil
}
