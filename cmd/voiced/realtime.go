package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/stt/pocketsphinx"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
	"github.com/voiced/voiced/media/realtime"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// The realtime WebSocket front door of serve: media/realtime's server,
// mounted on the API's listener at /v1/realtime, wired to control through
// the adapters below (media and control never import each other).

// providers are the conversation engine's AI providers, chosen by flags:
// OpenAI-compatible servers when a base URL is set, else the offline
// defaults (the echo model, espeak-ng).
type providers struct {
	llm     agent.LLM
	stt     agent.STT
	tts     agent.TTS
	closers []func()
}

func newProviders(c *config) (*providers, error) {
	p := &providers{}
	if c.LLMBaseURL == "" {
		p.llm = llm.NewEcho(llm.EchoConfig{WordByWord: true})
	} else {
		m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: c.LLMBaseURL, APIKey: c.LLMAPIKey, Model: c.LLMModel})
		if err != nil {
			return nil, fmt.Errorf("--llm-base-url: %w", err)
		}
		p.llm = m
	}
	if c.TTSBaseURL == "" {
		s, err := espeak.New(espeak.Config{})
		if err != nil {
			return nil, fmt.Errorf("espeak-ng: %w", err)
		}
		p.closers = append(p.closers, func() { s.Close() })
		p.tts = catalogVoices{Synthesizer: s, provider: "espeak"}
	} else {
		s, err := tts.NewOpenAI(tts.OpenAIConfig{BaseURL: c.TTSBaseURL, APIKey: c.TTSAPIKey, Model: c.TTSModel})
		if err != nil {
			p.close()
			return nil, fmt.Errorf("--tts-base-url: %w", err)
		}
		p.tts = catalogVoices{Synthesizer: s, provider: "openai"}
	}
	if c.STTBaseURL == "" {
		ps := &lazySphinx{}
		p.stt = ps
		p.closers = append(p.closers, ps.close)
	} else {
		s, err := stt.NewOpenAI(stt.OpenAIConfig{BaseURL: c.STTBaseURL, APIKey: c.STTAPIKey, Model: c.STTModel})
		if err != nil {
			p.close()
			return nil, fmt.Errorf("--stt-base-url: %w", err)
		}
		p.stt = s
	}
	return p, nil
}

func (p *providers) close() {
	for _, f := range p.closers {
		f()
	}
}

// catalogVoices maps the voice catalog's names ("espeak:en-us+f3") to the
// provider's own ("en-us+f3"); a voice of another provider falls back to
// the provider's default for the language.
type catalogVoices struct {
	tts.Synthesizer
	provider string
}

func (v catalogVoices) Synthesize(ctx context.Context, r tts.Request) (tts.Audio, error) {
	if p, name, ok := strings.Cut(r.Voice, ":"); ok {
		if p == v.provider {
			r.Voice = name
		} else {
			r.Voice = ""
		}
	}
	return v.Synthesizer.Synthesize(ctx, r)
}

// lazySphinx is the offline default transcriber: PocketSphinx with its
// American English language model, loaded on the first spoken turn (about
// 0.5 s and 95 MB) rather than at every start. If the model cannot load,
// spoken turns fail their transcription
// (conversation.item.input_audio_transcription.failed) and text turns still
// work.
type lazySphinx struct {
	once sync.Once
	rec  *pocketsphinx.Recognizer
	err  error
}

func (l *lazySphinx) Transcribe(ctx context.Context, r stt.Request) (stt.Result, error) {
	l.once.Do(func() {
		if l.rec, l.err = pocketsphinx.New(pocketsphinx.Config{}); l.err != nil {
			l.err = fmt.Errorf("offline speech-to-text (pocketsphinx): %w", l.err)
		}
	})
	if l.err != nil {
		return stt.Result{}, l.err
	}
	return l.rec.Transcribe(ctx, r)
}

func (l *lazySphinx) close() {
	l.once.Do(func() { l.err = errors.New("closed") })
	if l.rec != nil {
		l.rec.Close()
	}
}

// realtimeFront is the running realtime server.
type realtimeFront struct {
	srv       *realtime.Server
	prov      *providers
	ownPacer  *pace.Pacer
	sessions  int
	loopback  bool
	closeOnce bool
}

// startRealtime builds the realtime server and mounts it on the API.
// pacer is the node's send clock when telephony runs one (nil: its own).
func startRealtime(c *config, api *control.Server, e *env, pacer *pace.Pacer, blobDir string, log *slog.Logger) (*realtimeFront, error) {
	f := &realtimeFront{sessions: int(c.RealtimeOrgSessions), loopback: c.RealtimeLoopback}
	if pacer == nil {
		p, err := pace.New(pace.Config{}, log)
		if err != nil {
			return nil, err
		}
		pacer, f.ownPacer = p, p
	}
	deps := realtime.Deps{Auth: rtAuth{api}, Calls: rtCalls{log: api.CallLog(), lat: &sync.Map{}}, Pacer: pacer}
	if !c.RealtimeLoopback {
		prov, err := newProviders(c)
		if err != nil {
			f.close(context.Background())
			return nil, err
		}
		f.prov = prov
		deps.LLM, deps.STT, deps.TTS = prov.llm, prov.stt, prov.tts
	}
	if sem, ok := e.coord.(coord.Semaphore); ok {
		deps.Slots = rtSlots{sem}
	} else {
		f.sessions = 0
	}
	x := webhook.NewExchanger(e.store.Webhooks, c.WebhookAllowLoopback, time.Now, log)
	deps.Tools = func(a realtime.Admission) agent.ToolRunner { return webTools{x: x, adm: a} }
	srv, err := realtime.New(realtime.Config{OrgSessions: f.sessions, Loopback: c.RealtimeLoopback, BlobDir: blobDir, Model: c.LLMModel,
		DeltaFrames: int(c.RealtimeDeltaMs / 20)},
		log.With("component", "realtime"), deps)
	if err != nil {
		f.close(context.Background())
		return nil, err
	}
	f.srv = srv
	api.MountRealtime(srv)
	return f, nil
}

// close ends the sessions (giving them until ctx ends) and frees the
// providers.
func (f *realtimeFront) close(ctx context.Context) {
	if f.closeOnce {
		return
	}
	f.closeOnce = true
	if f.srv != nil {
		_ = f.srv.Close(ctx)
	}
	if f.prov != nil {
		f.prov.close()
	}
	if f.ownPacer != nil {
		f.ownPacer.Close()
	}
}

// rtAuth adapts control's credential checks.
type rtAuth struct{ api *control.Server }

func (a rtAuth) Authenticate(ctx context.Context, key string) (int64, error) {
	org, err := a.api.AuthenticateAPIKey(ctx, key)
	if errors.Is(err, control.ErrInvalidCredential) {
		return 0, realtime.ErrUnauthorized
	}
	return org, err
}

func (a rtAuth) Claim(ctx context.Context, token string) (realtime.Admission, error) {
	g, err := a.api.ClaimRealtimeToken(ctx, token)
	if errors.Is(err, control.ErrInvalidCredential) {
		return realtime.Admission{}, realtime.ErrUnauthorized
	}
	if err != nil {
		return realtime.Admission{}, err
	}
	return toRealtime(g.Admission, g.Inline), nil
}

// rtCalls adapts control's CallLog. It also times each session's
// responses from the turns it records (lat: *quality.Latency by call id,
// from the first record to Finish): a session's quality is its response
// latency, the WebSocket carrying no RTP to measure.
type rtCalls struct {
	log *control.CallLog
	lat *sync.Map
}

func (r rtCalls) AdmitAgent(ctx context.Context, orgID, agentID int64) (realtime.Admission, error) {
	adm, err := r.log.Admit(ctx, control.AdmitRequest{Direction: storage.DirectionWeb, OrgID: orgID, AgentID: agentID})
	if err != nil {
		return realtime.Admission{}, admitErr(err)
	}
	return toRealtime(adm, false), nil
}

func (r rtCalls) AdmitInline(ctx context.Context, orgID int64, cfg json.RawMessage) (realtime.Admission, error) {
	adm, err := r.log.AdmitInline(ctx, orgID, cfg, "")
	var ae *control.APIError
	if errors.As(err, &ae) && ae.Fields != nil {
		return realtime.Admission{}, &realtime.ConfigError{Fields: ae.Fields}
	}
	if err != nil {
		return realtime.Admission{}, admitErr(err)
	}
	return toRealtime(adm, true), nil
}

func admitErr(err error) error {
	switch {
	case errors.Is(err, control.ErrUnknownAgent):
		return realtime.ErrUnknownAgent
	case errors.Is(err, control.ErrInsufficientBalance):
		return realtime.ErrInsufficientBalance
	}
	return err
}

func (r rtCalls) Append(ctx context.Context, callID int64, evs []realtime.CallEvent) error {
	out := make([]control.CallEvent, len(evs))
	v, _ := r.lat.LoadOrStore(callID, &quality.Latency{})
	for i, e := range evs {
		if e.Kind == control.EventTurn {
			observeTurn(v.(*quality.Latency), e.Role, e.Start, e.End)
		}
		out[i] = control.CallEvent{ID: e.ID, Kind: e.Kind, At: e.At, Role: e.Role, Text: e.Text, Start: e.Start, End: e.End,
			Interrupted: e.Interrupted, ToolCallID: e.ToolCallID, ToolName: e.ToolName, Arguments: e.Arguments, Output: e.Output, IsError: e.IsError}
	}
	return r.log.Append(ctx, callID, out)
}

func (r rtCalls) Finish(ctx context.Context, callID int64, end realtime.CallEnd) error {
	ce := control.CallEnd{Status: end.Status, Reason: end.Reason, Detail: end.Detail, At: end.At,
		RecordingKey: end.RecordingKey, RecordingStartedAt: end.RecordingStartedAt}
	if v, ok := r.lat.LoadAndDelete(callID); ok {
		ce.Quality = &control.CallQuality{ResponseLatencyMS: responseLatency(v.(*quality.Latency))}
	}
	return r.log.Finish(ctx, callID, ce)
}

// toRealtime converts an admission to the media side's terms.
func toRealtime(adm control.Admission, inline bool) realtime.Admission {
	a := adm.Agent
	ra := realtime.Agent{Prompt: a.Prompt, Voice: a.Voice, Product: a.Product, Language: a.PrimaryLanguage,
		Placeholders: a.Placeholders, SpeakFirst: a.InboundSpeakOrder == "agent_first",
		CheckinInterval: time.Duration(a.SilenceIntervalSeconds) * time.Second, MaxCheckins: a.SilenceMaxCheckins,
		MaxDuration: time.Duration(a.MaxCallDurationSeconds) * time.Second, NoiseReduction: a.Telephony.NoiseReduction,
		EchoCancellation: a.Telephony.EchoCancellation, EndpointingMS: a.Telephony.EndpointingMS, Interruptible: a.Telephony.Interruptible}
	if a.FirstMessage != nil {
		ra.FirstMessage = *a.FirstMessage
	}
	for _, t := range a.Tools {
		ra.Tools = append(ra.Tools, realtime.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	maxDur := adm.MaxDuration
	if maxDur == control.NoLimit {
		maxDur = 0
	}
	return realtime.Admission{CallID: adm.CallID, OrgID: adm.OrgID, AgentID: adm.AgentID, Agent: ra, Inline: inline,
		MaxDuration: maxDur, Start: adm.StartTime}
}

// rtSlots adapts a coord.Semaphore.
type rtSlots struct{ sem coord.Semaphore }

func (s rtSlots) Acquire(ctx context.Context, key string, size int, ttl time.Duration) (string, error) {
	tok, err := s.sem.Acquire(ctx, key, size, ttl)
	if errors.Is(err, coord.ErrFull) {
		return "", realtime.ErrSessionLimit
	}
	return tok, err
}

func (s rtSlots) Release(ctx context.Context, key, token string) error {
	return s.sem.Release(ctx, key, token)
}

func (s rtSlots) ExtendLease(ctx context.Context, key, token string, ttl time.Duration) error {
	return s.sem.ExtendLease(ctx, key, token, ttl)
}

// webTools runs a saved agent's tools through the organization's legacy
// webhook (the blocking web.tool exchange, spec 6.2).
type webTools struct {
	x   *webhook.Exchanger
	adm realtime.Admission
}

func (w webTools) RunTool(ctx context.Context, call llm.ToolCall) (string, error) {
	var agentID *int64
	if w.adm.AgentID != 0 {
		id := w.adm.AgentID
		agentID = &id
	}
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	res, err := w.x.Tool(ctx, w.adm.OrgID, webhook.ToolRequest{Channel: webhook.Web, CallID: w.adm.CallID, AgentID: agentID,
		ToolCallID: call.ID, Name: call.Name, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.Error != "" {
		return "", errors.New(res.Error)
	}
	return string(res.Output), nil
}
