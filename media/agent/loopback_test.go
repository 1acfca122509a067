package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/turn"
)

// A loopback session is given no STT, model or voice, and nothing it is
// asked to do may call one: an agent that speaks first crashed the whole
// server through a realtime session in loopback (issue 30).
func TestLoopbackCallsNoProvider(t *testing.T) {
	t.Run("speaks first", func(t *testing.T) {
		for _, first := range []string{"", "Hello there."} {
			m := newSim(t, Config{Loopback: true, OutputRate: media.Rate16k, SpeakFirst: true, FirstMessage: first}, Deps{})
			// The loop takes the opening before any command: once this
			// response is created, the opening was skipped or refused.
			require.NoError(t, m.s.CreateResponse("ev", ResponseOptions{}))
			waitFor[ResponseCreated](t, m.k, nil)
			m.untilDone(100)
			require.Equal(t, 1, count[ResponseCreated](m.k), "first message %q: %s", first, kinds(m.k.all()))
			require.Zero(t, count[Error](m.k), kinds(m.k.all()))
		}
	})
	t.Run("check-ins", func(t *testing.T) {
		m := newSim(t, Config{Loopback: true, OutputRate: media.Rate16k, TurnDetection: serverVAD(),
			CheckinInterval: 100 * time.Millisecond, MaxCheckins: 1}, Deps{})
		for range 400 {
			m.tick(nil)
			if count[Error](m.k) > 0 {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		require.Equal(t, "provider_unavailable", waitFor[Error](t, m.k, nil).Code)
		require.Zero(t, count[ResponseCreated](m.k))
	})
	t.Run("idle timeout answers", func(t *testing.T) {
		td := serverVAD()
		td.Turn = turn.Config{IdleTimeout: 100 * time.Millisecond}
		m := newSim(t, Config{Loopback: true, OutputRate: media.Rate16k, TurnDetection: td}, Deps{})
		for range 200 {
			m.tick(nil)
			if count[Error](m.k) > 0 {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		waitFor[InputTimeout](t, m.k, nil)
		require.Equal(t, "provider_unavailable", waitFor[Error](t, m.k, nil).Code)
		require.Zero(t, count[ResponseCreated](m.k))
	})
}
