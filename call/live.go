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
