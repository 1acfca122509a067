package agent

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media"
)

// TestSay: Say speaks its text with the voice and no model; a second Say
// while the first plays is refused; the loopback engine refuses it.
func TestSay(t *testing.T) {
	lm := &fakeLLM{}
	tts := &fakeTTS{wordMS: 100}
	m := newSim(t, Config{OutputRate: media.Rate16k}, Deps{LLM: lm, STT: &fakeSTT{}, TTS: tts})
	require.NoError(t, m.s.Say("vm", "Please call us back."))
	require.NoError(t, m.s.Say("again", "Twice."))
	require.Equal(t, "conversation_already_has_active_response", waitFor[Error](t, m.k, nil).Code)
	done := m.untilDone(200)
	require.Equal(t, "Please call us back.", done.Response.Output[0].Content[0].Transcript)
	require.Equal(t, []string{"Please call us back."}, tts.said())
	require.Empty(t, lm.requests())

	lb := newSim(t, Config{Loopback: true, OutputRate: media.Rate16k}, Deps{})
	require.NoError(t, lb.s.Say("vm", "Hello."))
	require.Equal(t, "say_unavailable", waitFor[Error](t, lb.k, nil).Code)
}
