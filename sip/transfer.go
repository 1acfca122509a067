package sip

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// errTransferBusy: one transfer at a time per call.
var errTransferBusy = errors.New("sip: a transfer is already in progress")

// Transfer hands the caller over to target with a cold (blind) transfer:
// a REFER (RFC 3515) with Refer-To target, then the NOTIFY reports of
// the new leg. target is an E.164 number (sent to the peer's host), a
// tel: URI or a sip:/sips: URI. On success the call ends with reason
// ai_transfer and Transfer returns nil; a refused REFER or a failed new
// leg returns a *ResponseError and the call goes on. Bridging a new leg
// ourselves when the peer refuses REFER is not implemented.
func (c *Call) Transfer(ctx context.Context, target string) error {
	uri, err := c.referURI(target)
	if err != nil {
		return err
	}
	ch := make(chan int, 8)
	c.mu.Lock()
	switch {
	case c.answered.IsZero():
		c.mu.Unlock()
		return errors.New("sip: transfer before the call is answered")
	case c.notify != nil:
		c.mu.Unlock()
		return errTransferBusy
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
		return fmt.Errorf("refer: %w", err)
	}
	if !res.IsSuccess() {
		return &ResponseError{Op: "REFER", Code: res.StatusCode, Reason: res.Reason}
	}
	// From here a BYE from the peer most likely means the transfer went
	// through (some phones hang up before the final NOTIFY).
	c.setForceReason(ReasonTransfer)
	for {
		select {
		case code := <-ch:
			switch {
			case code < 0:
				c.setForceReason("")
				return &ResponseError{Op: "transfer", Code: 0, Reason: "subscription ended without a final status"}
			case code < 200:
				continue
			case code < 300:
				c.log.Info("call transferred", "target", uri)
				c.hangup(ReasonTransfer)
				return nil
			}
			c.setForceReason("")
			return &ResponseError{Op: "transfer", Code: code, Reason: "new leg failed"}
		case <-c.dialogCtx().Done():
			return nil
		case <-ctx.Done():
			c.setForceReason("")
			return ctx.Err()
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
