package call

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media/dsp"
)

// TestEngineConfigPerChannel: one agent maps to the same engine
// configuration on every channel but for the differences the Channel
// table states (rates, echo cancellation), the direction's speak order,
// and an inline session's lack of automatic behaviours.
func TestEngineConfigPerChannel(t *testing.T) {
	first := "Hello."
	a := control.AgentConfig{Prompt: "Be kind.", Voice: "espeak:en-us", PrimaryLanguage: "en-US", InboundSpeakOrder: "agent_first",
		OutboundSpeakOrder: "user_first", FirstMessage: &first, SilenceIntervalSeconds: 10, SilenceMaxCheckins: 2,
		Telephony: control.Telephony{NoiseReduction: "far_field", EchoCancellation: true, EndpointingMS: 700, Interruptible: true}}
	for _, tc := range []struct {
		name string
		ch   Channel
		rate int
		echo bool
	}{{"phone", ChannelPhone, 16000, true}, {"browser", ChannelBrowser, 16000, false}, {"realtime", ChannelRealtime, 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engineConfig(tc.ch, a, engineCall{maxDur: time.Minute})
			require.Equal(t, "Be kind.", cfg.Instructions)
			require.Equal(t, "en-US", cfg.Language)
			require.True(t, cfg.SpeakFirst)
			require.Equal(t, "Hello.", cfg.FirstMessage)
			require.Equal(t, 10*time.Second, cfg.CheckinInterval)
			require.True(t, cfg.EndCall)
			require.Equal(t, 700*time.Millisecond, cfg.TurnDetection.Turn.SilenceDuration)
			require.True(t, cfg.TurnDetection.InterruptResponse)
			require.Equal(t, dsp.FarField, cfg.DSP.NoiseReduction)
			require.Equal(t, time.Minute, cfg.MaxDuration)
			require.Equal(t, tc.rate, cfg.InputRate)
			require.Equal(t, tc.rate, cfg.OutputRate)
			require.Equal(t, tc.echo, cfg.DSP.EchoCancellation)
		})
	}
	require.False(t, engineConfig(ChannelPhone, a, engineCall{outbound: true}).SpeakFirst, "outbound: the outbound order")
	inline := engineConfig(ChannelRealtime, a, engineCall{inline: true})
	require.Equal(t, "Be kind.", inline.Instructions)
	require.False(t, inline.SpeakFirst || inline.EndCall || inline.MaxCheckins > 0, "inline sessions have no automatic behaviours")
	require.Equal(t, 90*time.Second, callLimit(control.AgentConfig{MaxCallDurationSeconds: 90}, calllog.NoLimit))
	require.Zero(t, callLimit(control.AgentConfig{}, calllog.NoLimit))
}
