package realtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media/agent"
)

// The agent's pauses and resumes are voiced's own events: a client gets
// them only when it asked (?voiced_events=playout), so OpenAI's clients,
// which do not know them, never see them.
func TestPlayoutEventsOnlyWhenAsked(t *testing.T) {
	set, err := initialSettings(map[string][]string{})
	require.NoError(t, err)
	require.False(t, set.playoutEvents)
	plain := &encoder{tag: "x"}
	require.Nil(t, plain.encode(agent.PlayoutPaused{ResponseID: "resp_1", ItemID: "item_1", AudioMS: 1240}))
	require.Nil(t, plain.encode(agent.PlayoutResumed{ResponseID: "resp_1", ItemID: "item_1", AudioMS: 1240}))

	set, err = initialSettings(map[string][]string{"voiced_events": {"playout"}})
	require.NoError(t, err)
	require.True(t, set.playoutEvents)
	asked := &encoder{tag: "x", playout: true}
	for typ, ev := range map[string]agent.Event{
		"voiced.output_audio.paused":  agent.PlayoutPaused{ResponseID: "resp_1", ItemID: "item_1", AudioMS: 1240},
		"voiced.output_audio.resumed": agent.PlayoutResumed{ResponseID: "resp_1", ItemID: "item_1", AudioMS: 1240},
	} {
		out := asked.encode(ev)
		require.Len(t, out, 1)
		var m map[string]any
		require.NoError(t, json.Unmarshal(out[0], &m))
		require.Equal(t, typ, m["type"])
		require.Equal(t, "resp_1", m["response_id"])
		require.Equal(t, "item_1", m["item_id"])
		require.EqualValues(t, 1240, m["audio_ms"])
		require.NotEmpty(t, m["event_id"])
	}

	_, err = initialSettings(map[string][]string{"voiced_events": {"everything"}})
	require.ErrorContains(t, err, "voiced_events")
}
