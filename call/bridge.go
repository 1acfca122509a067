package call

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/voiced/voiced/media/rtp"
	"github.com/voiced/voiced/sip"
)

// Bridging is the fallback of a transfer the caller's side will not do by
// REFER (sip/bridge.go): the sip package dials the destination through the
// trunk on a leg with an RTP session of its own (legMedia), then the
// call's media relays audio between the caller's session and the leg's in
// place of the agent. Both sessions decode to and encode from the engine
// rate, so the two sides may use different codecs. The caller's frames
// reach the leg from the input loop (callMedia.input: the one reader of
// the caller's session); relay carries the leg's frames to the caller.

// errNotLeg: Bridge was given a session OpenLeg did not make.
var errNotLeg = errors.New("bridge: not a leg of this node")

// legMedia is a transfer leg's media: an RTP session on the node's ports
// and pacer, no engine behind it. It implements sip.Media.
type legMedia struct {
	rtp  *rtp.Session
	call *sip.Call
	log  *slog.Logger

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// OpenLeg implements sip.Bridger.
func (m *callMedia) OpenLeg(_ context.Context, leg *sip.Call) (sip.Media, error) {
	log := m.log.With("leg", leg.SIPCallID())
	s, err := rtp.NewSession(m.t.rtpCfg, log, m.t.pacer, m.t.ports)
	if err != nil {
		return nil, err
	}
	l := &legMedia{rtp: s, call: leg, log: log, stop: make(chan struct{})}
	l.wg.Add(1)
	go l.watch()
	return l, nil
}

// Bridge implements sip.Bridger: from now on the caller hears the leg and
// the leg hears the caller; the agent hears and says nothing.
func (m *callMedia) Bridge(l sip.Media) error {
	leg, ok := l.(*legMedia)
	if !ok {
		return errNotLeg
	}
	select {
	case <-m.stop:
		return rtp.ErrClosed
	default:
	}
	if err := m.rtp.SetSource(nil, 0); err != nil {
		return fmt.Errorf("caller session: %w", err)
	}
	m.bridge.Store(leg.rtp)
	// The leg takes the caller's frames at 16 kHz (its WriteFrame); set
	// after the bridge, so no 16 kHz frame reaches an 8 kHz agent.
	if err := m.rtp.SetSinkAt(callerSink{m}, rtp.EngineRate); err != nil {
		return fmt.Errorf("caller session: %w", err)
	}
	m.wg.Add(1)
	go m.relay(leg)
	m.log.Info("caller bridged to the transfer leg")
	return nil
}

// relay plays the leg's audio to the caller until either side closes.
func (m *callMedia) relay(leg *legMedia) {
	defer m.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
		case <-leg.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	buf := make([]int16, rtp.EngineRate/50)
	for {
		n, err := leg.rtp.ReadFrame(ctx, buf)
		if err != nil {
			return
		}
		// A full queue means we are ahead of the caller's pacing by the
		// queue's length: the frame is dropped, the relay goes on.
		if err := m.rtp.WriteFrame(buf[:n]); err != nil && !errors.Is(err, rtp.ErrQueueFull) {
			return
		}
	}
}

// LocalAddr implements sip.Media.
func (l *legMedia) LocalAddr() netip.AddrPort { return l.rtp.LocalAddr() }

// Update implements sip.Media.
func (l *legMedia) Update(st sip.Stream) error { return l.rtp.Update(rtpParams(st)) }

// Close implements sip.Media.
func (l *legMedia) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.stop)
		err = l.rtp.Close()
		l.wg.Wait()
	})
	return err
}

// watch hangs the leg up when its RTP stops for the media timeout.
func (l *legMedia) watch() {
	defer l.wg.Done()
	hangupOnMediaTimeout(l.rtp, l.stop, l.call, l.log, "transfer leg media timeout")
}

// rtpParams is the RTP session's configuration for a negotiated stream.
func rtpParams(st sip.Stream) rtp.Params {
	return rtp.Params{
		Remote:     st.Remote,
		Codec:      rtpCodec(st.Codec),
		RecvPT:     st.RecvPT,
		DTMF:       rtpCodec(st.DTMF),
		RecvDTMFPT: st.RecvDTMFPT,
		Send:       st.Sends(),
		Receive:    st.Receives(),
	}
}
