package call

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	sessions "github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
	"github.com/voiced/voiced/media/realtime"
)

// Realtime is the realtime WebSocket front door: media/realtime's server
// (mounted on the API's listener at /v1/realtime by cmd), wired to the
// control plane and the node's tool chain.
type Realtime struct {
	srv      *realtime.Server
	ownPacer *pace.Pacer
	calls    *rtCalls
	closed   bool
}

// NewRealtime builds the realtime server. pacer is the node's send clock
// when telephony runs one (nil: its own); prov nil (or
// cfg.Realtime.Loopback) plays turns back; slots bounds an
// organization's sessions (nil: no cap); stats counts the sessions and
// the pacer's timing (nil: no figures).
func NewRealtime(cfg Config, log *slog.Logger, pacer *pace.Pacer, ctl Control, prov *Providers, slots realtime.Slots, tools *Chain, stats *Stats, recs *agent.Recorders) (*Realtime, error) {
	f := &Realtime{}
	if pacer == nil {
		p, err := pace.New(pace.Config{}, log)
		if err != nil {
			return nil, err
		}
		pacer, f.ownPacer = p, p
	}
	rc := cfg.Realtime
	if prov == nil {
		rc.Loopback = true
	}
	calls := &rtCalls{ctl: ctl, chain: tools}
	f.calls = calls
	deps := realtime.Deps{Auth: rtAuth{ctl.Credentials, calls}, Calls: calls, Pacer: pacer, Tools: calls.tools, Recorders: recs,
		Started: calls.started(log)}
	if !rc.Loopback {
		deps.LLM, deps.STT, deps.TTS = prov.LLM, prov.STT, prov.TTS
	}
	sessions := rc.OrgSessions
	if slots == nil {
		sessions = 0
	} else {
		deps.Slots = slots
	}
	srv, err := realtime.New(realtime.Config{OrgSessions: sessions, Loopback: rc.Loopback, BlobDir: cfg.BlobDir, Model: cfg.Model,
		DeltaFrames: rc.DeltaFrames}, log.With("component", "realtime"), deps)
	if err != nil {
		f.Close(context.Background())
		return nil, err
	}
	f.srv = srv
	if stats != nil {
		stats.SetPacer(pacer)
		stats.mu.Lock()
		stats.sessions[doorRealtime] = srv.Sessions
		stats.mu.Unlock()
	}
	return f, nil
}

// Handler is the WebSocket endpoint (control.Realtime.Mount).
func (f *Realtime) Handler() http.Handler { return f.srv }

// Drain refuses new sessions, gives those open until ctx ends, closes the
// rest (end reason node_shutdown), then closes the door.
func (f *Realtime) Drain(ctx context.Context) {
	if f == nil || f.closed {
		return
	}
	if f.srv != nil {
		_ = f.srv.Drain(ctx)
	}
	f.Close(ctx)
}

// Close ends the sessions, giving them until ctx ends.
func (f *Realtime) Close(ctx context.Context) {
	if f == nil || f.closed {
		return
	}
	f.closed = true
	if f.srv != nil {
		_ = f.srv.Close(ctx)
	}
	if f.ownPacer != nil {
		f.ownPacer.Close()
	}
}

// rtAuth adapts the control plane's credential checks.
type rtAuth struct {
	creds Credentials
	calls *rtCalls
}

func (a rtAuth) Authenticate(ctx context.Context, key string) (int64, error) {
	org, err := a.creds.AuthenticateAPIKey(ctx, key)
	if errors.Is(err, sessions.ErrInvalidCredential) {
		return 0, realtime.ErrUnauthorized
	}
	return org, err
}

func (a rtAuth) Claim(ctx context.Context, token string) (realtime.Admission, error) {
	g, err := a.creds.ClaimRealtimeToken(ctx, token)
	if errors.Is(err, sessions.ErrInvalidCredential) {
		return realtime.Admission{}, realtime.ErrUnauthorized
	}
	if err != nil {
		return realtime.Admission{}, err
	}
	return a.calls.admitted(g.Admission, g.Inline), nil
}

// rtCalls adapts the control plane's Admitter, Recorder and Finisher to
// media/realtime's CallLog. It resolves each saved agent's tools at
// admission (tools: by call id until the session takes them) and times
// each session's responses from the turns it records (lat: by call id,
// from the first record to Finish): a session's quality is its response
// latency, the WebSocket carrying no RTP to measure.
type rtCalls struct {
	ctl   Control
	chain *Chain
	lat   sync.Map // call id → *quality.Latency
	tls   sync.Map // call id → *CallTools
	live  sync.Map // call id → *agent.Session, from start to Finish
	taps  sync.Map // call id → *Tap, likewise: live listen
}

// started registers a session that has started (realtime.Deps.Started):
// for whisper, and with a tap of its own for live listen.
func (r *rtCalls) started(log *slog.Logger) func(int64, *agent.Session) {
	return func(id int64, s *agent.Session) {
		t := &Tap{}
		if err := s.SetAudioTap(t); err != nil {
			log.Warn("realtime session cannot be listened to", "call_id", id, "err", err)
		} else {
			r.taps.Store(id, t)
		}
		r.live.Store(id, s)
	}
}

func (r *rtCalls) AdmitAgent(ctx context.Context, orgID, agentID int64) (realtime.Admission, error) {
	adm, err := r.ctl.Admit.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionWeb, OrgID: orgID, AgentID: agentID})
	if err != nil {
		return realtime.Admission{}, admitErr(err)
	}
	return r.admitted(adm, false), nil
}

func (r *rtCalls) AdmitInline(ctx context.Context, orgID int64, cfg json.RawMessage) (realtime.Admission, error) {
	adm, err := r.ctl.Admit.AdmitInline(ctx, orgID, cfg, "")
	var ae *control.APIError
	if errors.As(err, &ae) && ae.Fields != nil {
		return realtime.Admission{}, &realtime.ConfigError{Fields: ae.Fields}
	}
	if err != nil {
		return realtime.Admission{}, admitErr(err)
	}
	return r.admitted(adm, true), nil
}

func admitErr(err error) error {
	switch {
	case errors.Is(err, calllog.ErrUnknownAgent):
		return realtime.ErrUnknownAgent
	case errors.Is(err, calllog.ErrInsufficientBalance):
		return realtime.ErrInsufficientBalance
	}
	return err
}

// admitted is an admission in the media side's terms: the agent's engine
// configuration from the one mapping, and a saved agent's tools from the
// chain, resolved now.
func (r *rtCalls) admitted(adm control.Admission, inline bool) realtime.Admission {
	a := adm.Agent
	ra := realtime.Admission{CallID: adm.CallID, OrgID: adm.OrgID, AgentID: adm.AgentID, Inline: inline, Start: adm.StartTime,
		MaxDuration: callLimit(control.AgentConfig{}, adm.MaxDuration),
		Agent:       realtime.Agent{Prompt: a.Prompt, Voice: a.Voice, EndpointingMS: a.Telephony.EndpointingMS, Interruptible: a.Telephony.Interruptible}}
	var specs []agent.Tool
	if !inline { // an inline session's tools are the client's, run by the client
		ct := r.chain.Resolve(Info{CallID: adm.CallID, OrgID: adm.OrgID, AgentID: adm.AgentID, Agent: a, Direction: calllog.DirectionWeb,
			Channel: ChannelRealtime})
		r.tls.Store(adm.CallID, ct)
		specs = ct.specs
		for _, t := range specs {
			ra.Agent.Tools = append(ra.Agent.Tools, realtime.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
	}
	ra.Agent.Engine = engineConfig(ChannelRealtime, a, engineCall{inline: inline, maxDur: callLimit(a, adm.MaxDuration), tools: specs})
	return ra
}

// tools hands a saved agent's call its resolved tools (realtime.Deps.Tools).
func (r *rtCalls) tools(a realtime.Admission) agent.ToolRunner {
	if v, ok := r.tls.LoadAndDelete(a.CallID); ok {
		return v.(*CallTools)
	}
	return nil
}

// Record keeps an engine event of the call (eventOf, as on every
// channel) and times the responses from its turns.
func (r *rtCalls) Record(ctx context.Context, callID int64, id string, e agent.Event) error {
	if t, ok := e.(agent.Turn); ok {
		v, _ := r.lat.LoadOrStore(callID, &quality.Latency{})
		observeTurn(v.(*quality.Latency), t.Role, t.Start, t.End)
	}
	ev, ok := eventOf(e)
	if !ok {
		return nil
	}
	if ev.ID == "" {
		ev.ID = id
	}
	return r.ctl.Record.Append(ctx, callID, []calllog.CallEvent{ev})
}

func (r *rtCalls) Finish(ctx context.Context, callID int64, end realtime.CallEnd) error {
	r.tls.Delete(callID)
	r.live.Delete(callID)
	if v, ok := r.taps.LoadAndDelete(callID); ok {
		v.(*Tap).Close() // its listeners get 1000 "call ended"
	}
	r.chain.End(callID)
	ce := calllog.CallEnd{Status: end.Status, Reason: end.Reason, Detail: end.Detail, At: end.At,
		RecordingKey: end.RecordingKey, RecordingStartedAt: end.RecordingStartedAt}
	if v, ok := r.lat.LoadAndDelete(callID); ok {
		ce.Quality = &calllog.CallQuality{ResponseLatencyMS: responseLatency(v.(*quality.Latency))}
	}
	return r.ctl.Finish.Finish(ctx, callID, ce)
}
