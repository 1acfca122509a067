package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/dsp"
	"github.com/voiced/voiced/media/quality"
	"github.com/voiced/voiced/media/rtp"
	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/sdp"
)

// callMedia is one phone call's media: its RTP session and the
// conversation engine behind it. It implements sip.Media (the sip
// package drives it from the SDP) and sip.DTMFReceiver (SIP INFO
// digits).
//
// The engine is the call's agent with the node's providers (offline
// PocketSphinx, echo and espeak-ng unless flags name others), or with
// --call-loopback the loopback agent, which plays each
// caller turn back with no STT, model or TTS: the whole media path (RTP,
// jitter buffer, turn detection, playout, pacer) without conversing.
//
// The caller's audio goes into the agent on the node pacer's worker, one
// frame per tick right after the RTP socket is drained (callerSink, an
// rtp.Sink): no goroutine of the call's own wakes per packet or frame.
// Goroutines: the watcher (media timeout, which hangs up) and the DTMF
// recorder (digits into the call's events); Close stops and waits for
// both.
type callMedia struct {
	t      *telephony
	call   *sip.Call
	rtp    *rtp.Session
	agent  *agent.Session
	log    *slog.Logger
	recKey string
	// vm is answering-machine detection (voicemail.go); nil when off.
	vm *screening

	mu    sync.Mutex
	turns []control.CallEvent

	digits    chan rune
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	// lostDigits counts digits dropped because the recorder fell behind.
	lostDigits atomic.Int64
	// bridge is the transfer leg the caller is bridged to (bridge.go).
	bridge atomic.Pointer[rtp.Session]

	// Quality (quality.go): response latency from the engine's turns;
	// dead air and talk-over from the caller's frames (talk, on the pacer
	// worker) and whether the agent was playing (agentTalking).
	latency      quality.Latency
	talk         quality.Talk
	agentTalking atomic.Bool
}

func newCallMedia(t *telephony, c *sip.Call, s *rtp.Session, info callInfo, recDir string) (*callMedia, error) {
	name := strconv.FormatInt(c.ID(), 10) + ".wav"
	m := &callMedia{t: t, call: c, rtp: s, log: t.log.With("call_id", c.ID()),
		recKey: path.Join("recordings", strconv.FormatInt(info.orgID, 10), name),
		digits: make(chan rune, 64), stop: make(chan struct{})}
	var deps agent.Deps
	if t.prov != nil {
		deps = agent.Deps{LLM: t.prov.llm, STT: t.prov.stt, TTS: t.prov.tts,
			Tools: phoneTools{x: t.x, orgID: info.orgID, agentID: info.agentID, callID: c.ID(), call: c, dests: info.agent.TransferDestinations,
				calls: t.calls.Load, log: m.log}}
	}
	deps.Recorders = t.recorders
	cfg := phoneAgentConfig(info, c.Direction(), t.prov == nil, t.model, filepath.Join(recDir, name))
	if c.Narrowband() {
		// G.711: the agent listens and speaks at 8 kHz, so the pacer
		// hands it the caller's frames as decoded and encodes its own as
		// they come, with no resampler per call and tick either way, and
		// the call is recorded at its own rate (docs/decisions.md).
		cfg.InputRate, cfg.OutputRate = media.Rate8k, media.Rate8k
	}
	vm, err := newScreening(m, info, c.Direction(), t.prov == nil, cfg.InputRate)
	if err != nil {
		return nil, err
	}
	m.vm = vm
	m.talk.Metrics = s.Metrics()
	a, err := agent.New(vm.holdConfig(cfg), m.log, deps, m)
	if err != nil {
		return nil, err
	}
	m.agent = a
	s.OnDTMF(func(d rtp.Digit) { m.DTMF(d.Digit, d.Duration) })
	if err := s.SetSource(agentSource{a, &m.agentTalking}, cfg.OutputRate); err != nil {
		a.Close()
		return nil, err
	}
	if err := s.SetSinkAt(callerSink{m}, cfg.InputRate); err != nil {
		a.Close()
		return nil, err
	}
	m.wg.Add(2)
	go m.watch()
	go m.recordDigits()
	return m, nil
}

// agentSource feeds the pacer from the agent's playout and notes whether
// the agent is speaking.
type agentSource struct {
	a       *agent.Session
	talking *atomic.Bool
}

// HotLines implements rtp.HotObject: what the next ReadFrame touches.
func (s agentSource) HotLines() rtp.HotLister { return rtp.Lines(s.talking, s.a.OutputLines()) }

func (s agentSource) ReadFrame(dst []int16) bool {
	ok := s.a.ReadFrame(dst) != nil
	if s.talking.Load() != ok { // a store is a locked instruction; it seldom changes
		s.talking.Store(ok)
	}
	return ok
}

// LocalAddr implements sip.Media.
func (m *callMedia) LocalAddr() netip.AddrPort { return m.rtp.LocalAddr() }

// Update implements sip.Media: the negotiated stream becomes the RTP
// session's parameters.
func (m *callMedia) Update(st sip.Stream) error { return m.rtp.Update(rtpParams(st)) }

func rtpCodec(c sdp.Codec) rtp.Codec {
	return rtp.Codec{PT: c.PT, Name: c.Name, ClockRate: c.ClockRate, Channels: c.Channels}
}

// DTMF implements sip.DTMFReceiver; RFC 4733 digits come here too. It
// never blocks (it runs on the pacer worker that drains the RTP socket).
func (m *callMedia) DTMF(d rune, _ time.Duration) {
	select {
	case m.digits <- d:
	default:
		m.lostDigits.Add(1)
	}
}

// Event implements agent.Sink: turns are kept for the transcript, the
// agent ending the call hangs up.
func (m *callMedia) Event(e agent.Event) {
	switch ev := e.(type) {
	case agent.Turn:
		observeTurn(&m.latency, ev.Role, ev.Start, ev.End)
		if ev.Text != "" {
			m.mu.Lock()
			m.turns = append(m.turns, control.CallEvent{ID: "turn-" + ev.ItemID, Kind: control.EventTurn, Role: ev.Role, Text: ev.Text,
				Start: ev.Start, End: ev.End, Interrupted: ev.Interrupted})
			m.mu.Unlock()
		}
	case agent.Ended:
		m.call.Hangup(ev.Reason)
	case agent.ResponseDone, agent.Error:
		m.vm.agentEvent(e)
	}
}

// transcript returns the call's turns so far.
func (m *callMedia) transcript() []control.CallEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]control.CallEvent(nil), m.turns...)
}

// phoneAgentConfig is the engine configuration of a phone call: the
// agent's (prompt, voice, language, who speaks first in this direction,
// greeting, check-ins, tools, the telephony audio settings) unless
// loopback, which only plays turns back.
func phoneAgentConfig(info callInfo, direction string, loopback bool, model, recPath string) agent.Config {
	a := info.agent
	td := &agent.TurnDetection{CreateResponse: true, InterruptResponse: loopback || a.Telephony.Interruptible}
	if a.Telephony.EndpointingMS > 0 {
		td.Turn.SilenceDuration = time.Duration(a.Telephony.EndpointingMS) * time.Millisecond
	}
	cfg := agent.Config{Loopback: loopback, InputRate: rtp.EngineRate, OutputRate: rtp.EngineRate, TurnDetection: td, RecordPath: recPath, MaxDuration: info.maxDur}
	if loopback {
		return cfg
	}
	cfg.Instructions, cfg.Voice, cfg.Language, cfg.Model = a.Prompt, a.Voice, a.PrimaryLanguage, model
	cfg.Placeholders = a.Placeholders
	order := a.InboundSpeakOrder
	if direction == sip.Outbound {
		order = a.OutboundSpeakOrder
	}
	cfg.SpeakFirst = order == "agent_first"
	if a.FirstMessage != nil {
		cfg.FirstMessage = *a.FirstMessage
	}
	cfg.CheckinInterval, cfg.MaxCheckins = time.Duration(a.SilenceIntervalSeconds)*time.Second, a.SilenceMaxCheckins
	cfg.EndCall = true
	for _, t := range a.Tools {
		cfg.Tools = append(cfg.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if tt, ok := transferTool(a.TransferDestinations); ok {
		cfg.Tools = append(cfg.Tools, tt)
	}
	switch a.Telephony.NoiseReduction {
	case "near_field":
		cfg.DSP.NoiseReduction = dsp.NearField
	case "far_field":
		cfg.DSP.NoiseReduction = dsp.FarField
	}
	// Phones and speakerphones echo the agent back down the line.
	cfg.DSP.EchoCancellation = a.Telephony.EchoCancellation
	return cfg
}

// transferToolName is the built-in tool that hands the caller over to
// one of the agent's transfer destinations (a cold transfer by REFER).
const transferToolName = "transfer_call"

// transferTool describes transfer_call for the agent's destinations.
func transferTool(dests []control.TransferDestination) (llm.Tool, bool) {
	if len(dests) == 0 {
		return llm.Tool{}, false
	}
	names := make([]string, 0, len(dests))
	desc := "Transfer the caller to a person or team; tell the caller first. Destinations:"
	for _, d := range dests {
		names = append(names, d.Name)
		desc += " " + d.Name
		if d.Description != "" {
			desc += " (" + d.Description + ")"
		}
		desc += ";"
	}
	params, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"destination"},
		"properties": map[string]any{"destination": map[string]any{"type": "string", "enum": names}}})
	return llm.Tool{Name: transferToolName, Description: desc, Parameters: params}, true
}

// destination finds the transfer destination transfer_call's arguments
// name.
func destination(dests []control.TransferDestination, args string) (control.TransferDestination, error) {
	var in struct {
		Destination string `json:"destination"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil || in.Destination == "" {
		return control.TransferDestination{}, errors.New("transfer_call needs a destination")
	}
	for _, d := range dests {
		if strings.EqualFold(d.Name, in.Destination) || d.Number == in.Destination {
			return d, nil
		}
	}
	return control.TransferDestination{}, fmt.Errorf("no transfer destination %q", in.Destination)
}

// phoneTools runs a phone call's tools: transfer_call itself (REFER),
// the others through the blocking telephony.tool exchange with the
// organization's legacy webhook (spec 6.2).
type phoneTools struct {
	x                      *webhook.Exchanger
	orgID, agentID, callID int64
	call                   *sip.Call
	dests                  []control.TransferDestination
	calls                  func() *control.CallLog
	log                    *slog.Logger
}

func (w phoneTools) runTool(ctx context.Context, call llm.ToolCall) (string, error) {
	if call.Name == transferToolName && len(w.dests) > 0 {
		d, err := destination(w.dests, call.Arguments)
		if err != nil {
			return "", err
		}
		if err := w.call.Transfer(ctx, d.Number); err != nil {
			return "", fmt.Errorf("the transfer did not go through: %w", err)
		}
		if l := w.calls(); l != nil {
			ev := control.CallEvent{ID: "transfer-" + call.ID, Kind: control.EventTransfer, At: time.Now(), Destination: d.Number}
			if err := l.Append(context.WithoutCancel(ctx), w.callID, []control.CallEvent{ev}); err != nil {
				w.log.Warn("transfer not recorded", "err", err)
			}
		}
		if w.call.Bridged() {
			return `{"status":"bridged"}`, nil
		}
		return `{"status":"transferred"}`, nil
	}
	agentID := w.agentID
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	res, err := w.x.Tool(ctx, w.orgID, webhook.ToolRequest{Channel: webhook.Telephony, CallID: w.callID, AgentID: &agentID,
		ToolCallID: call.ID, Name: call.Name, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.Error != "" {
		return "", errors.New(res.Error)
	}
	return string(res.Output), nil
}

// Close implements sip.Media.
func (m *callMedia) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.stop)
		err = m.rtp.Close() // leaves the pacer: no caller frame after this
		m.wg.Wait()
		if aerr := m.agent.Close(); aerr != nil && err == nil {
			err = aerr
		}
		if n := m.lostDigits.Load(); n > 0 {
			m.log.Warn("dtmf digits not recorded", "count", n)
		}
	})
	return err
}

// recording returns the recording's blob key and start, empty when no
// file was written.
func (m *callMedia) recording() (string, time.Time) {
	if _, err := os.Stat(filepath.Join(m.t.blobDir, filepath.FromSlash(m.recKey))); err != nil {
		return "", time.Time{}
	}
	return m.recKey, m.agent.Start()
}

// callerSink moves the caller's audio from RTP into the agent and the
// answering-machine screening, one 20 ms frame per pacer tick, on the
// pacer worker (it is the agent's input goroutine: all of the agent's
// input-side calls come from here). rtp.Session.Close stops the calls.
type callerSink struct{ m *callMedia }

func (k callerSink) WriteFrame(pcm []int16) error { return k.WriteFrameFrom(pcm, nil) }

// HotLines implements rtp.HotObject: what the next WriteFrameFrom touches.
func (k callerSink) HotLines() rtp.HotLister { return rtp.Lines(k.m, k.m.agent.InputLines()) }

// WriteFrameFrom implements rtp.DecodedSink: a recording at the codec's
// rate takes the caller's frame as decoded.
func (k callerSink) WriteFrameFrom(pcm, decoded []int16) error {
	if leg := k.m.bridge.Load(); leg != nil {
		// Bridged (bridge.go): the leg hears the caller, the agent
		// nothing. Bridge has the frames come at 16 kHz, the leg's
		// WriteFrame rate; a frame at another rate from the tick in
		// flight as it did is dropped.
		if len(pcm) == rtp.EngineRate/50 {
			leg.WriteFrame(pcm)
		}
		return nil
	}
	if err := k.m.agent.WriteFrameFrom(pcm, decoded); err != nil {
		return err
	}
	k.m.talk.ObserveFrame(pcm, k.m.agentTalking.Load())
	k.m.vm.frame(pcm)
	return nil
}

// watch hangs up when the peer's RTP stops for the media timeout.
func (m *callMedia) watch() {
	defer m.wg.Done()
	hangupOnMediaTimeout(m.rtp, m.stop, m.call, m.log, "media timeout")
}

// hangupOnMediaTimeout waits until s ends or stop closes, and hangs c up
// (logging msg) when s ended because the peer's RTP stopped.
func hangupOnMediaTimeout(s *rtp.Session, stop <-chan struct{}, c *sip.Call, log *slog.Logger, msg string) {
	select {
	case <-s.Done():
		if errors.Is(s.Err(), rtp.ErrMediaTimeout) {
			log.Info(msg)
			c.Hangup("media_timeout")
		}
	case <-stop:
	}
}

// recordDigits appends each DTMF digit to the call's events.
func (m *callMedia) recordDigits() {
	defer m.wg.Done()
	n := 0
	for {
		select {
		case d := <-m.digits:
			n++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := m.t.calls.Load().Append(ctx, m.call.ID(), []control.CallEvent{{ID: "dtmf-" + strconv.Itoa(n), Kind: control.EventDTMF,
				At: time.Now(), Digits: string(d)}})
			cancel()
			if err != nil {
				m.log.Warn("dtmf not recorded", "err", err)
			}
		case <-m.stop:
			return
		}
	}
}
