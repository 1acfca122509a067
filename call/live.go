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
// (agent.Session.Whisper): phone and realtime calls (browser calls not
// yet).
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

// Listen adds a listener of phone call callID's mixed audio (Tap), at
// the call's input rate (8 kHz on G.711 calls, else 16 kHz); ErrNotLive
// when the node does not hold the call. Groundwork for
// POST /v1/calls/{id}/listen, whose endpoint is not built yet.
func (n *Node) Listen(callID int64, buf int) (*Listener, *Tap, error) {
	if n.Phone != nil {
		if v, ok := n.Phone.media.Load(callID); ok {
			t := &v.(*callMedia).tap
			if l := t.Listen(buf); l != nil {
				return l, t, nil
			}
		}
	}
	return nil, nil, ErrNotLive
}

// Holds reports whether this node holds live call callID.
func (n *Node) Holds(callID int64) bool { return n.session(callID) != nil }

func (n *Node) session(callID int64) *agent.Session {
	if n.Phone != nil {
		if v, ok := n.Phone.media.Load(callID); ok {
			return v.(*callMedia).agent
		}
	}
	if n.rt != nil {
		if v, ok := n.rt.calls.live.Load(callID); ok {
			return v.(*agent.Session)
		}
	}
	return nil
}
