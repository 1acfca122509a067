package sip

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// errTransferBusy: one transfer at a time per call.
var errTransferBusy = errors.New("sip: a transfer is already in progress")

// Transfer hands the caller over to target with a cold (blind) transfer:
// a REFER (RFC 3515) with Refer-To target, then the NOTIFY reports of
// the new leg. target is an E.164 number (sent to the peer's host), a
// tel: URI or a sip:/sips: URI. On success the call ends with reason
// ai_transfer and Transfer returns nil.
//
// When the peer refuses the REFER (a final failure, a NOTIFY with a
// failure, no final NOTIFY, no answer to the REFER) and the call has a
// route (its VoIP connection) and media that can bridge, the transfer
// falls back to bridging (bridge.go): a new leg to target through the
// trunk, media relayed between it and the caller; Transfer then returns
// nil once the leg answered, and the call ends ai_transfer when either
// side hangs up. Otherwise the REFER's failure (a *ResponseError) is
// returned and the call goes on.
//
// A transfer asked for while the call still rings waits for the answer
// (or ctx, or the call's end): a speak-first agent starts with the call's
// media session, before the 200 OK, and its tools may run that early.
func (c *Call) Transfer(ctx context.Context, target string) error {
	if err := c.awaitAnswer(ctx); err != nil {
		return err
	}
	cur := c.current()
	uri, err := cur.referURI(target)
	if err != nil {
		return err
	}
	rerr, fallback := cur.refer(ctx, uri, c)
	if rerr == nil || !fallback {
		return rerr
	}
	c.log.Info("REFER transfer failed; bridging", "err", rerr)
	if err := c.bridgeTo(ctx, target); err != nil {
		if errors.Is(err, errNoRoute) || errors.Is(err, errNoBridge) {
			return rerr
		}
		return fmt.Errorf("%w; bridging: %w", rerr, err)
	}
	return nil
}

// awaitAnswer waits until the call is answered.
func (c *Call) awaitAnswer(ctx context.Context) error {
	select {
	case <-c.answeredCh:
		return nil
	case <-c.setup.Done():
		select {
		case <-c.answeredCh:
			return nil
		default:
			return errors.New("sip: transfer of a call that ended before it was answered")
		}
	case <-ctx.Done():
		return fmt.Errorf("sip: transfer before the call was answered: %w", ctx.Err())
	}
}

// current is the leg the conversation is on: the call's own dialog, or
// the last leg a REFER from the peer moved it to.
func (c *Call) current() *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.moved); n > 0 {
		return c.moved[n-1]
	}
	return c
}

// refer runs a REFER on this dialog for owner's transfer. fallback
// reports whether the peer declined or failed it (bridging may follow)
// rather than the transfer being impossible or given up.
func (c *Call) refer(ctx context.Context, uri string, owner *Call) (err error, fallback bool) {
	ch := make(chan int, 8)
	c.mu.Lock()
	switch {
	case c.answered.IsZero():
		c.mu.Unlock()
		return errors.New("sip: transfer before the call is answered"), false
	case c.notify != nil:
		c.mu.Unlock()
		return errTransferBusy, false
	}
	c.notify = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.notify = nil
		c.mu.Unlock()
	}()
	req := sip.NewRequest(sip.REFER, c.remoteTarget())
	req.AppendHeader(sip.NewHeader("Refer-To", "<"+uri+">"))
	req.AppendHeader(sip.NewHeader("Referred-By", "<"+c.ourURI()+">"))
	res, err := c.do(ctx, req)
	if err != nil {
		return fmt.Errorf("refer: %w", err), ctx.Err() == nil
	}
	if !res.IsSuccess() {
		return &ResponseError{Op: "REFER", Code: res.StatusCode, Reason: res.Reason}, true
	}
	// From here a BYE from the peer most likely means the transfer went
	// through (some phones hang up before the final NOTIFY).
	owner.setForceReason(ReasonTransfer)
	wait := time.NewTimer(c.srv.cfg.RingTimeout + 5*time.Second)
	defer wait.Stop()
	for {
		select {
		case code := <-ch:
			switch {
			case code < 0:
				owner.setForceReason("")
				return &ResponseError{Op: "transfer", Code: 0, Reason: "subscription ended without a final status"}, true
			case code < 200:
				continue
			case code < 300:
				c.log.Info("call transferred", "target", uri)
				owner.hangup(ReasonTransfer)
				return nil, false
			}
			owner.setForceReason("")
			return &ResponseError{Op: "transfer", Code: code, Reason: "new leg failed"}, true
		case <-wait.C:
			owner.setForceReason("")
			return &ResponseError{Op: "transfer", Code: 0, Reason: "no final NOTIFY"}, true
		case <-c.dialogCtx().Done():
			return nil, false
		case <-ctx.Done():
			owner.setForceReason("")
			return ctx.Err(), false
		}
	}
}

func (c *Call) setForceReason(r string) {
	c.mu.Lock()
	c.forceReason = r
	c.mu.Unlock()
}

// referURI turns a transfer target into a Refer-To URI.
func (c *Call) referURI(target string) (string, error) {
	target = strings.TrimSpace(target)
	low := strings.ToLower(target)
	switch {
	case strings.HasPrefix(low, "sip:") || strings.HasPrefix(low, "sips:"):
		var u sip.Uri
		if err := sip.ParseUri(target, &u); err != nil || u.Host == "" {
			return "", fmt.Errorf("sip: transfer target %q is not a SIP URI", target)
		}
		return target, nil
	case strings.HasPrefix(low, "tel:"):
		target = target[4:]
	}
	n := Number(target)
	if !allDigits(strings.TrimPrefix(n, "+")) {
		return "", fmt.Errorf("sip: transfer target %q is not a number or SIP URI", target)
	}
	rt := c.remoteTarget()
	return "sip:" + n + "@" + rt.HostPort(), nil
}

// ourURI is our address in the dialog (Referred-By).
func (c *Call) ourURI() string {
	if c.sd != nil {
		return c.sd.InviteRequest.To().Address.Addr()
	}
	return c.cd.InviteRequest.From().Address.Addr()
}
