package call

import (
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/dsp"
)

// Channel is what differs between the front doors above the transport.
// Everything else about a call (its agent's configuration, tools, events,
// record) is the same on every channel.
type Channel struct {
	// door names the front door in the node's media metrics.
	door string
	// hook is the channel of the webhook tool exchange.
	hook webhook.Channel
	// rate is the engine's audio rate both ways: 16 kHz, the analysis
	// rate, which RTP and Opus decode to and encode from without a
	// resampler (a narrowband phone call lowers it to 8 kHz).
	rate int
	// echo: the agent's echo_cancellation applies. Phones and
	// speakerphones echo the agent back down the line; browsers cancel
	// their own echo (the widget asks getUserMedia for it); realtime
	// clients may do either (the canceller gets a delay hint).
	echo bool
	// transfer: transfer_call can be offered (a SIP leg to REFER or
	// bridge).
	transfer bool
	// inbandDTMF: key presses come as tones in the caller's audio, the
	// channel having no out-of-band digits (a phone call has RFC 4733
	// and SIP INFO), so the engine listens for them (media/dtmf).
	inbandDTMF bool
}

// The channels: the per-channel differences, in one place.
var (
	ChannelPhone    = Channel{door: doorPhone, hook: webhook.Telephony, rate: media.Rate16k, echo: true, transfer: true}
	ChannelBrowser  = Channel{door: doorBrowser, hook: webhook.Web, rate: media.Rate16k, inbandDTMF: true}
	ChannelRealtime = Channel{door: doorRealtime, hook: webhook.Web, echo: true, inbandDTMF: true}
)

// Speak orders of an agent (control.AgentConfig.InboundSpeakOrder).
const agentFirst = "agent_first"

// callLimit is a call's limit: the funded duration, or the agent's
// max_call_duration_seconds when shorter; 0 for none.
func callLimit(a control.AgentConfig, funded time.Duration) time.Duration {
	d := funded
	if s := a.MaxCallDurationSeconds; s > 0 && time.Duration(s)*time.Second < d {
		d = time.Duration(s) * time.Second
	}
	if d >= calllog.NoLimit {
		return 0
	}
	return d
}

// engineCall is what engineConfig needs of a call besides its agent.
type engineCall struct {
	// outbound picks the outbound speak order; loopback only plays turns
	// back; inline is a realtime session configured by its client, with
	// no automatic behaviours (spec 4.14).
	outbound, loopback, inline bool
	// maxDur is the call's limit (callLimit), 0 for none.
	maxDur time.Duration
	model  string
	// tools are the call's, resolved by the Chain.
	tools   []agent.Tool
	recPath string
}

// engineConfig is the one mapping from an admitted call's agent (deployed,
// draft or inline) to the conversation engine's configuration, on every
// channel: the agent's prompt, voice, language, who speaks first in this
// direction, greeting, check-ins, tools and audio processing, with the
// channel's differences (ch). In loopback only the turn-taking, as
// loopback plays each turn back. The realtime door puts the client's
// session settings over it (media/realtime).
func engineConfig(ch Channel, a control.AgentConfig, c engineCall) agent.Config {
	td := &agent.TurnDetection{CreateResponse: true, InterruptResponse: c.loopback || a.Telephony.Interruptible}
	if a.Telephony.EndpointingMS > 0 {
		td.Turn.SilenceDuration = time.Duration(a.Telephony.EndpointingMS) * time.Millisecond
	}
	cfg := agent.Config{Loopback: c.loopback, InputRate: ch.rate, OutputRate: ch.rate, TurnDetection: td, RecordPath: c.recPath, MaxDuration: c.maxDur,
		InbandDTMF: ch.inbandDTMF}
	if c.loopback {
		return cfg
	}
	cfg.Instructions, cfg.Voice, cfg.Language, cfg.Model = a.Prompt, a.Voice, a.PrimaryLanguage, c.model
	cfg.Placeholders, cfg.Tools = a.Placeholders, c.tools
	cfg.DSP.NoiseReduction = noiseReduction(a.Telephony.NoiseReduction)
	cfg.DSP.EchoCancellation = ch.echo && a.Telephony.EchoCancellation
	if c.inline {
		return cfg
	}
	order := a.InboundSpeakOrder
	if c.outbound {
		order = a.OutboundSpeakOrder
	}
	cfg.SpeakFirst = order == agentFirst
	if a.FirstMessage != nil {
		cfg.FirstMessage = *a.FirstMessage
	}
	cfg.CheckinInterval, cfg.MaxCheckins = time.Duration(a.SilenceIntervalSeconds)*time.Second, a.SilenceMaxCheckins
	cfg.EndCall = true
	return cfg
}

// noiseReduction maps an agent's noise_reduction setting.
func noiseReduction(s string) dsp.NoiseReduction {
	switch s {
	case "near_field":
		return dsp.NearField
	case "far_field":
		return dsp.FarField
	}
	return dsp.NoiseReductionOff
}
