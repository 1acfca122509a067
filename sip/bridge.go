package sip

import (
	"context"
	"errors"
	"fmt"
)

// Bridger is implemented by a Media that can hand its peer over to
// another leg: the fallback of a transfer the peer will not do itself
// (REFER refused or failed). Without it a refused REFER is the
// transfer's failure.
type Bridger interface {
	// OpenLeg opens the media session of leg, with an RTP address of its
	// own; the Server updates it from the leg's SDP and closes it when
	// the leg ends.
	OpenLeg(ctx context.Context, leg *Call) (Media, error)
	// Bridge relays audio both ways between this session's peer and the
	// peer of leg (a session OpenLeg returned), in place of the
	// conversation engine, until either session is closed.
	Bridge(leg Media) error
}

var errNoBridge = errors.New("sip: the call's media cannot bridge")

// bridgeTo transfers the caller by bridging: a new leg to target through
// the call's route, then media relayed between the caller and it. When
// either side hangs up the other gets BYE; the call ends ai_transfer.
func (c *Call) bridgeTo(ctx context.Context, target string) error {
	b, ok := c.media.(Bridger)
	if !ok {
		return errNoBridge
	}
	user, err := c.dialUser(target)
	if err != nil {
		return err
	}
	c.mu.Lock()
	busy := c.bridged != nil
	c.mu.Unlock()
	if busy {
		return errTransferBusy
	}
	leg, err := c.newLeg(user)
	if err != nil {
		return err
	}
	m, err := b.OpenLeg(ctx, leg)
	if err != nil {
		return fmt.Errorf("bridge media: %w", err)
	}
	leg.media = m
	fail := func(err error) error {
		if leg.key != "" {
			c.srv.removeCall(leg.key)
			leg.bye()
		}
		m.Close()
		return err
	}
	if err := leg.invite(ctx, m.LocalAddr()); err != nil {
		return fail(err)
	}
	if c.dialogCtx().Err() != nil || c.hangupReason() != "" {
		return fail(errors.New("sip: the call ended during the transfer"))
	}
	if err := b.Bridge(m); err != nil {
		return fail(fmt.Errorf("bridge: %w", err))
	}
	c.mu.Lock()
	c.bridged, c.forceReason = leg, ReasonTransfer
	c.mu.Unlock()
	c.log.Info("call bridged to transfer leg", "to", user)
	c.srv.wg.Add(1)
	go c.holdBridge(leg)
	return nil
}

// holdBridge runs the bridged leg until it or the call ends, then ends
// the other.
func (c *Call) holdBridge(leg *Call) {
	defer c.srv.wg.Done()
	stop := make(chan struct{})
	go func() {
		select {
		case <-c.done:
			leg.hangup(ReasonTransfer)
		case <-stop:
		}
	}()
	reason := leg.run(0)
	close(stop)
	c.srv.removeCall(leg.key)
	leg.media.Close()
	close(leg.done)
	leg.log.Info("transfer leg ended", "reason", reason)
	c.hangup(ReasonTransfer)
}

// Bridged reports whether a transfer bridged the call to a new leg
// (rather than handing it over by REFER).
func (c *Call) Bridged() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bridged != nil
}
