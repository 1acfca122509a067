package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/call/sim"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/simulations"
	"github.com/voiced/voiced/media"
)

// simulator makes simulation runs' calls with the simulated caller
// (call/sim) against this process's own front doors: telephony runs dial
// the node's SIP address from a second SIP user agent on loopback, web
// runs join the realtime WebSocket with the session token the control
// plane issued. Its voice is espeak-ng; its words come from the control
// plane's model (--llm-base-url) when one is set, else the caller says
// the scenario prompt once.
//
// Inbound runs (the agent calls the simulated caller) have the node's
// telephony dial the call the control plane recorded (dial, the node's
// own outbound path) to the simulator's user agent, which answers it.
type simulator struct {
	log     *slog.Logger
	sipHost string
	sipPort int
	phoneOn bool
	model   llm.Provider
	dial    func(context.Context, control.OutboundCall) error

	mu    sync.Mutex
	phone *sim.Phone
	voice *espeak.Synth
}

func newSimulator(log *slog.Logger, sipAddr string, phoneOn bool, dial func(context.Context, control.OutboundCall) error, model llm.OpenAIConfig) (*simulator, error) {
	s := &simulator{log: log, phoneOn: phoneOn, dial: dial}
	host, port, err := net.SplitHostPort(sipAddr)
	if err != nil {
		return nil, err
	}
	s.sipHost = host
	if s.sipPort, err = strconv.Atoi(port); err != nil {
		return nil, err
	}
	if model.BaseURL != "" {
		m, err := llm.NewOpenAI(model)
		if err != nil {
			return nil, err
		}
		s.model = m
	}
	return s, nil
}

// start opens the simulator's SIP user agent and voice on first use.
func (s *simulator) start() (*sim.Phone, *espeak.Synth, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.voice == nil {
		v, err := espeak.New(espeak.Config{})
		if err != nil {
			return nil, nil, fmt.Errorf("espeak-ng: %w", err)
		}
		s.voice = v
	}
	if s.phone == nil && s.phoneOn {
		p, err := sim.NewPhone(sim.PhoneConfig{}, s.log)
		if err != nil {
			return nil, nil, err
		}
		s.phone = p
	}
	return s.phone, s.voice, nil
}

func (s *simulator) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phone != nil {
		s.phone.Close()
	}
	if s.voice != nil {
		s.voice.Close()
	}
}

func (s *simulator) Ready(channel string) error {
	if channel == "telephony" && !s.phoneOn {
		return errors.New("telephony is off on this node")
	}
	return nil
}

// accentFor is the simulated caller's accent for a run's language.
func accentFor(lang string) string {
	switch lang {
	case "en-US", "en-GB", "en-IN", "en-AU", "es-MX", "fr-CA":
		return lang
	}
	switch base, _, _ := strings.Cut(lang, "-"); base {
	case "es":
		return "es-MX"
	case "fr":
		return "fr-CA"
	}
	return "default"
}

// pauseLevel is the dBFS of the frames res sent without speech or a
// key's tone in them (false when there were none); -120 stands for
// digital silence.
func pauseLevel(res *sim.Result) (float64, bool) {
	if res.Rate == 0 || len(res.Speech) == 0 {
		return 0, false
	}
	frame := res.Rate / 50
	var quiet []int16
	for i, speech := range res.Speech {
		if speech || (i < len(res.Tone) && res.Tone[i]) || (i+1)*frame > len(res.Sent) {
			continue
		}
		quiet = append(quiet, res.Sent[i*frame:(i+1)*frame]...)
	}
	if len(quiet) == 0 {
		return 0, false
	}
	return max(media.DBFS(quiet), -120), true
}

// spans turns per-frame flags (20 ms each) into [from, to) spans in ms.
func spans(flags []bool) [][2]int64 {
	out := [][2]int64{}
	for i := 0; i < len(flags); {
		if !flags[i] {
			i++
			continue
		}
		j := i
		for j < len(flags) && flags[j] {
			j++
		}
		out = append(out, [2]int64{int64(i) * 20, int64(j) * 20})
		i = j
	}
	return out
}

// scenarioOf is the simulated caller's scenario of a run: its prompt and
// the caller settings of its test-run scenario (the defaults for a plain
// run, whose accent follows its language).
func scenarioOf(c simulations.Call) sim.Scenario {
	cl := c.Caller
	sc := sim.Scenario{Prompt: c.Prompt, TopicChange: cl.TopicChange, Accent: cl.Accent, Pace: cl.Pace, Disfluencies: cl.Disfluencies,
		NoiseAsset: cl.NoiseAsset, SilenceSeconds: cl.LongSilenceSeconds, DTMF: cl.DTMFSequence, VoicemailAnswer: cl.VoicemailAnswer}
	if sc.Accent == "" || sc.Accent == "default" {
		sc.Accent = accentFor(c.Language)
	}
	if cl.SNRdB != nil {
		sc.SNRDB = float64(*cl.SNRdB)
	}
	return sc
}

func (s *simulator) Simulate(ctx context.Context, c simulations.Call) (simulations.Outcome, error) {
	phone, voice, err := s.start()
	if err != nil {
		return simulations.Outcome{}, err
	}
	cfg := sim.Config{Scenario: scenarioOf(c), Model: s.model, TTS: voice,
		MaxDuration: simulations.MaxRunMinutes * time.Minute, Seed: uint64(c.RunID), KeepAudio: true}
	if cfg.Scenario.Prompt == "" {
		cfg.Scenario.Prompt = "Hello, I am calling to check that this line works."
	}
	var res *sim.Result
	var placed int64
	switch {
	case c.Direction == "inbound":
		if phone == nil || s.dial == nil {
			return simulations.Outcome{}, errors.New("telephony is off on this node")
		}
		var o control.OutboundCall
		if err := json.Unmarshal(c.Outbound, &o); err != nil || o.CallID == 0 {
			return simulations.Outcome{}, fmt.Errorf("the agent's call is unreadable: %v", err)
		}
		// The agent's call goes to the simulator's user agent, from this
		// node's SIP stack: G.711, as to a phone on the public network.
		ua := phone.Addr()
		o.Trunk = calllog.Trunk{Host: ua.Addr().String(), Port: int(ua.Port()), Transport: "udp", Codecs: []string{"PCMU", "PCMA"}}
		placed = o.CallID
		res, err = phone.Answer(ctx, c.Number, cfg, func(ctx context.Context) error { return s.dial(ctx, o) })
	case c.Channel == "telephony":
		if phone == nil {
			return simulations.Outcome{}, errors.New("telephony is off on this node")
		}
		res, err = phone.Call(ctx, sim.Target{Host: s.sipHost, Port: s.sipPort, To: c.Number}, cfg)
	default:
		res, err = sim.CallWeb(ctx, sim.WebTarget{URL: c.URL, Key: c.Token}, cfg)
	}
	if err != nil {
		return simulations.Outcome{}, err
	}
	if placed != 0 {
		res.CallID = placed
	}
	out := simulations.Outcome{CallID: res.CallID, End: res.End, Answered: !strings.HasPrefix(res.End, "not_answered"),
		Metadata: map[string]any{"caller_voice": res.Voice, "caller_lines": len(res.Lines), "caller_model": s.model != nil}}
	if res.SIPCallID != "" {
		out.Execution = "sip:" + res.SIPCallID
	}
	if sc := cfg.Scenario; sc.NoiseAsset != "" && sc.NoiseAsset != "none" {
		out.Metadata["caller_noise_asset"], out.Metadata["caller_snr_db"] = sc.NoiseAsset, sc.SNRDB
	}
	if sc := cfg.Scenario; sc.Pace != "" || sc.Disfluencies != "" {
		out.Metadata["caller_pace"], out.Metadata["caller_disfluencies"] = sc.Pace, sc.Disfluencies
	}
	// The level of what the caller sent between its words, measured: the
	// noise bed when a noise asset is mixed, digital silence otherwise.
	if lvl, ok := pauseLevel(res); ok {
		out.Metadata["caller_pause_dbfs"] = math.Round(lvl*10) / 10
	}
	// When it spoke and when it sent keys' tones, from its first frame:
	// where to look in the call's recording for its speech and for the
	// noise alone.
	out.Metadata["caller_speech_ms"], out.Metadata["caller_tone_ms"] = spans(res.Speech), spans(res.Tone)
	if res.DTMF != "" {
		out.Metadata["dtmf"], out.Metadata["dtmf_via"] = res.DTMF, res.DTMFVia
	}
	return out, nil
}
