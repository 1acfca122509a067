package call

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/quality"
)

// TestPhoneFramePathAllocatesNothing guards the per-frame path the node's
// pacer runs for every phone call: the caller's frame into the agent
// (callerSink) and the agent's frame out (agentSource), with the loopback
// engine at the narrowband rate.
func TestPhoneFramePathAllocatesNothing(t *testing.T) {
	m := &callMedia{}
	cfg := engineConfig(ChannelPhone, control.AgentConfig{}, engineCall{loopback: true})
	cfg.InputRate, cfg.OutputRate = media.Rate8k, media.Rate8k
	a, err := agent.New(cfg, slog.New(slog.DiscardHandler), agent.Deps{}, m)
	require.NoError(t, err)
	defer a.Close()
	m.agent = a
	m.talk.Metrics = &quality.Metrics{}
	in, out := make([]int16, media.SamplesPerFrame(media.Rate8k)), make([]int16, media.SamplesPerFrame(media.Rate8k))
	sink, src := callerSink{m}, agentSource{a, &m.agentTalking, &m.tap}
	for range 50 { // warm up: buffers reach their size
		require.NoError(t, sink.WriteFrameFrom(in, in))
		src.ReadFrame(out)
	}
	require.Zero(t, testing.AllocsPerRun(200, func() { _ = sink.WriteFrameFrom(in, in) }), "caller frame")
	require.Zero(t, testing.AllocsPerRun(200, func() { src.ReadFrame(out) }), "agent frame")
}
