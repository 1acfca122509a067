package call

import (
	"errors"

	"github.com/voiced/voiced/media/agent"
)

// ErrNotLive is returned for a call this node does not hold (never had,
// or it has ended).
var ErrNotLive = errors.New("call is not live on this node")

// Whisper gives the agent of live call callID private guidance that it
// takes into its context from its next turn, never spoken
// (agent.Session.Whisper): phone, browser and realtime calls.
func (n *Node) Whisper(callID int64, text string) error {
	s := n.session(callID)
	if s == nil {
		return ErrNotLive
	}
	if err := s.Whisper(text); err != nil {
		return ErrNotLive
	}
	return nil
}

// Listen adds a listener of live call callID's mixed audio (Tap) whose
// channel holds buf frames: phone calls at their input rate (8 kHz on
// G.711 calls, else 16 kHz), browser calls at 16 kHz, realtime sessions
// at agent.TapRate of their output (8 kHz for G.711 output, else 16
// kHz). ErrNotLive when the node holds no such call.
func (n *Node) Listen(callID int64, buf int) (*Listener, *Tap, error) {
	if t := n.tap(callID); t != nil {
		if l := t.Listen(buf); l != nil {
			return l, t, nil
		}
	}
	return nil, nil, ErrNotLive
}

// Listenable reports whether this node holds live call callID with a tap
// to listen to (a phone, browser or realtime call).
func (n *Node) Listenable(callID int64) bool { return n.tap(callID) != nil }

func (n *Node) tap(callID int64) *Tap {
	if n.Phone != nil {
		if v, ok := n.Phone.media.Load(callID); ok {
			return &v.(*callMedia).tap
		}
	}
	if n.Browser != nil {
		if v, ok := n.Browser.calls.Load(callID); ok {
			return &v.(*browserCall).tap
		}
	}
	if n.rt != nil {
		if v, ok := n.rt.calls.taps.Load(callID); ok {
			return v.(*Tap)
		}
	}
	return nil
}

// Holds reports whether this node holds live call callID.
func (n *Node) Holds(callID int64) bool { return n.session(callID) != nil }

func (n *Node) session(callID int64) *agent.Session {
	if n.Phone != nil {
		if v, ok := n.Phone.media.Load(callID); ok {
			return v.(*callMedia).agent
		}
	}
	if n.Browser != nil {
		if v, ok := n.Browser.calls.Load(callID); ok {
			return v.(*browserCall).agent
		}
	}
	if n.rt != nil {
		if v, ok := n.rt.calls.live.Load(callID); ok {
			return v.(*agent.Session)
		}
	}
	return nil
}
