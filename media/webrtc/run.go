package webrtc

import (
	"errors"
	"fmt"

	"github.com/voiced/voiced/media/quality"
)

// Conversation is the engine side of a call as Run drives it: the
// conversation engine (media/agent, adapted by cmd/voiced) or Echo.
type Conversation interface {
	// WriteFrame takes the caller's next 20 ms frame at the session's
	// InputRate.
	WriteFrame(in []int16) error
	// ReadFrame fills out with the agent's next 20 ms frame at the
	// session's OutputRate: silence when it has nothing to say.
	ReadFrame(out []int16)
}

// Run drives c on the calling goroutine, one frame each way per tick of
// the send clock, until the session ends; then it returns nil. An error
// from c ends the session (reason "engine_error") and is returned.
// Decoding, the engine's work and encoding all happen here, never on the
// pacer's goroutine. Run also measures dead air and talk-over (caller
// above about -40 dBFS, agent not silent) into the quality counters.
func (s *Session) Run(c Conversation) error {
	in := make([]int16, s.inSamples)
	out := make([]int16, s.outSamples)
	talk := quality.Talk{Metrics: s.m}
	for {
		if err := s.ReadFrame(in); err != nil {
			return closedOr(err)
		}
		if err := c.WriteFrame(in); err != nil {
			s.Close("engine_error")
			return fmt.Errorf("engine input: %w", err)
		}
		c.ReadFrame(out)
		if s.connected.Load() {
			talk.ObserveFrame(in, !silent(out))
		}
		if err := s.WriteFrame(out); err != nil {
			if !errors.Is(err, ErrClosed) {
				s.Close("engine_error")
			}
			return closedOr(err)
		}
	}
}

func closedOr(err error) error {
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}
