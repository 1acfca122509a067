package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
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
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
	"github.com/voiced/voiced/media/webrtc"
	"github.com/voiced/voiced/storage"
)

// browserFront is the browser front door: media/webrtc behind the
// control plane's widget and mic-session endpoints (control.BrowserMedia).
// Each call's session is driven by the conversation engine (media/agent).
// The engine converses with the agent's configuration and the serve's
// providers (offline PocketSphinx, echo and espeak-ng unless the STT, model
// and TTS flags name others). With --call-loopback it runs in loopback as
// phone calls do: each caller turn is played back, the whole media path
// runs, and the call is recorded and billed.
//
// Goroutines: one per call runs the session's frame loop and then reports
// the call's end to the CallLog; close ends every call and waits for them.
type browserFront struct {
	srv     *webrtc.Server
	calls   atomic.Pointer[control.CallLog]
	blobDir string
	log     *slog.Logger
	// prov is nil in loopback; x runs webhook-routed tools (web.tool).
	prov  *providers
	x     *webhook.Exchanger
	model string

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	// stats counts the calls' media for /metrics (quality.go).
	stats *mediaStats
}

// browserEngineRate is the rate of the engine's frames both ways: the
// agent's analysis rate, which Opus encodes and decodes without a
// resampler.
const browserEngineRate = media.Rate16k

// startBrowser opens the WebRTC UDP port. When the port was not chosen
// explicitly and cannot be opened (another voiced on the machine), serve
// runs without browser calls rather than failing.
func startBrowser(c *config, explicit bool, pacer *pace.Pacer, store *storage.Store, blobDir string, log *slog.Logger) (*browserFront, error) {
	cfg := webrtc.Config{UDPAddr: c.WebRTCUDPAddr, MaxSessions: int(c.WebRTCMaxSessions), InputRate: browserEngineRate, OutputRate: browserEngineRate}
	for _, ip := range strings.Split(c.WebRTCPublicIP, ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			cfg.PublicIPs = append(cfg.PublicIPs, ip)
		}
	}
	if u := strings.TrimSpace(c.WebRTCTURN); u != "" {
		cfg.ICEServers = []webrtc.ICEServer{{URLs: strings.Split(u, ","), Username: c.WebRTCTURNUser, Credential: c.WebRTCTURNPw}}
	}
	cfg.TURNSecret = c.WebRTCTURNSecret
	if c.WebRTCTURNTTL != "" {
		ttl, err := time.ParseDuration(c.WebRTCTURNTTL)
		if err != nil || ttl < time.Minute {
			return nil, fmt.Errorf("invalid --webrtc-turn-ttl %q: want a duration of at least 1m, like 24h", c.WebRTCTURNTTL)
		}
		cfg.TURNCredentialTTL = ttl
	}
	if host, _, err := net.SplitHostPort(c.WebRTCUDPAddr); err == nil {
		ip := net.ParseIP(host)
		cfg.IncludeLoopback = host == "" || host == "localhost" || (ip != nil && (ip.IsLoopback() || ip.IsUnspecified()))
	}
	srv, err := webrtc.New(cfg, log.With("component", "webrtc"), pacer)
	if errors.Is(err, webrtc.ErrBadConfig) {
		return nil, fmt.Errorf("invalid --webrtc-* settings: %w", err)
	}
	if err != nil {
		if explicit {
			return nil, err
		}
		log.Warn("browser calls off: the WebRTC UDP port cannot be opened; set --webrtc-udp-addr", "addr", c.WebRTCUDPAddr, "err", err)
		return nil, nil
	}
	b := &browserFront{srv: srv, blobDir: blobDir, log: log, model: c.LLMModel,
		x: webhook.NewExchanger(store.Webhooks, c.WebhookAllowLoopback, time.Now, log)}
	if !c.CallLoopback {
		if b.prov, err = newProviders(c); err != nil {
			srv.Close()
			return nil, err
		}
	}
	return b, nil
}

// setCallLog wires the CallLog once the control plane exists.
func (b *browserFront) setCallLog(l *control.CallLog) {
	if b != nil {
		b.calls.Store(l)
	}
}

// toolEvents is where browser calls' tool runs are recorded: the CallLog
// once wired, else nothing.
func (b *browserFront) toolEvents() toolEventer {
	if l := b.calls.Load(); l != nil {
		return l
	}
	return nil
}

// flagGiven reports whether flag name was set on the command line or
// through its environment twin.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// nodePacer is the telephony side's send clock when it runs, so browser
// and phone calls share the node's one pacer; nil otherwise.
func (t *telephony) nodePacer(on bool) *pace.Pacer {
	if !on {
		return nil
	}
	return t.pacer
}

// ICEServers implements control.BrowserICE: the node's TURN servers with
// credentials for id (time-limited with --webrtc-turn-secret).
func (b *browserFront) ICEServers(id string) ([]control.ICEServer, time.Time) {
	servers, exp := b.srv.BrowserICEServers(id)
	out := make([]control.ICEServer, 0, len(servers))
	for _, s := range servers {
		out = append(out, control.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential})
	}
	return out, exp
}

// Check implements control.BrowserMedia.
func (b *browserFront) Check(context.Context) error {
	if err := b.srv.Check(); err != nil {
		return fmt.Errorf("%w: %v", control.ErrMediaUnavailable, err)
	}
	return nil
}

// browserCall is one browser call's state on this node.
type browserCall struct {
	b      *browserFront
	call   control.BrowserCall
	log    *slog.Logger
	agent  *agent.Session
	sess   atomic.Pointer[webrtc.Session]
	recKey string

	mu    sync.Mutex
	turns []control.CallEvent

	// metrics are the session's counters; latency the engine's response
	// latency (quality.go).
	metrics *quality.Metrics
	latency quality.Latency
}

// Answer implements control.BrowserMedia: it starts the engine and the
// WebRTC session, and a goroutine that runs the call to its end.
func (b *browserFront) Answer(ctx context.Context, c control.BrowserCall, offer string) (string, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return "", control.ErrMediaUnavailable
	}
	b.mu.Unlock()
	org := strconv.FormatInt(c.OrgID, 10)
	name := strconv.FormatInt(c.CallID, 10) + ".wav"
	bc := &browserCall{b: b, call: c, log: b.log.With("call_id", c.CallID), recKey: path.Join("recordings", org, name)}
	recDir := filepath.Join(b.blobDir, "recordings", org)
	if err := os.MkdirAll(recDir, 0o700); err != nil {
		return "", fmt.Errorf("recording dir: %w", err)
	}
	maxDur := c.MaxDuration
	if s := c.Agent.MaxCallDurationSeconds; s > 0 && time.Duration(s)*time.Second < maxDur {
		maxDur = time.Duration(s) * time.Second
	}
	if maxDur == control.NoLimit {
		maxDur = 0
	}
	var deps agent.Deps
	if b.prov != nil {
		tools := browserTools{x: b.x, call: c, calls: b.toolEvents, log: bc.log}
		deps = agent.Deps{LLM: b.prov.llm, STT: b.prov.stt, TTS: b.prov.tts, Tools: tools}
	}
	var err error
	bc.agent, err = agent.New(browserAgentConfig(c, b.prov == nil, b.model, filepath.Join(recDir, name)), bc.log, deps, bc)
	if err != nil {
		return "", err
	}
	metrics := &quality.Metrics{}
	// The engine ends the call at its MaxDuration (reason timeout) after
	// saying so; the session's own limit is a backstop a little later.
	sessMax := maxDur
	if sessMax > 0 {
		sessMax += 5 * time.Second
	}
	sess, answer, err := b.srv.Answer(ctx, offer, webrtc.SessionOptions{CallID: c.CallID, MaxDuration: sessMax, Metrics: metrics})
	if err != nil {
		bc.agent.Close()
		switch {
		case errors.Is(err, webrtc.ErrBadOffer):
			return "", fmt.Errorf("%w: %v", control.ErrBadOffer, err)
		case errors.Is(err, webrtc.ErrCapacity), errors.Is(err, webrtc.ErrClosed):
			return "", fmt.Errorf("%w: %v", control.ErrMediaUnavailable, err)
		}
		return "", err
	}
	bc.sess.Store(sess)
	bc.metrics = metrics
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		sess.Close("shutdown")
		bc.agent.Close()
		return "", control.ErrMediaUnavailable
	}
	b.stats.add(doorBrowser, metrics)
	b.wg.Go(func() { bc.run(sess) })
	return answer, nil
}

// browserAgentConfig is the engine configuration of a browser call: the
// agent's (its prompt, voice, language, greeting, check-ins, tools,
// audio processing) unless loopback, which only plays turns back.
func browserAgentConfig(c control.BrowserCall, loopback bool, model, recPath string) agent.Config {
	a := c.Agent
	td := &agent.TurnDetection{CreateResponse: true, InterruptResponse: loopback || a.Telephony.Interruptible}
	if a.Telephony.EndpointingMS > 0 {
		td.Turn.SilenceDuration = time.Duration(a.Telephony.EndpointingMS) * time.Millisecond
	}
	maxDur := c.MaxDuration
	if s := a.MaxCallDurationSeconds; s > 0 && time.Duration(s)*time.Second < maxDur {
		maxDur = time.Duration(s) * time.Second
	}
	if maxDur == control.NoLimit {
		maxDur = 0
	}
	cfg := agent.Config{Loopback: loopback, OutputRate: browserEngineRate, TurnDetection: td, RecordPath: recPath, MaxDuration: maxDur}
	if loopback {
		return cfg
	}
	cfg.Instructions, cfg.Voice, cfg.Language, cfg.Model = a.Prompt, a.Voice, a.PrimaryLanguage, model
	cfg.Placeholders = a.Placeholders
	cfg.SpeakFirst = a.InboundSpeakOrder == "agent_first"
	if a.FirstMessage != nil {
		cfg.FirstMessage = *a.FirstMessage
	}
	cfg.CheckinInterval, cfg.MaxCheckins = time.Duration(a.SilenceIntervalSeconds)*time.Second, a.SilenceMaxCheckins
	cfg.EndCall = true
	for _, t := range a.Tools {
		cfg.Tools = append(cfg.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	switch a.Telephony.NoiseReduction {
	case "near_field":
		cfg.DSP.NoiseReduction = dsp.NearField
	case "far_field":
		cfg.DSP.NoiseReduction = dsp.FarField
	}
	// Browsers cancel their own echo (the widget asks getUserMedia for it).
	return cfg
}

// browserTools runs a browser call's tools through the blocking web.tool
// exchange with the organization's legacy webhook (spec 6.2), and reports
// each run as a web.tool event to the subscribed webhook endpoints.
type browserTools struct {
	x     *webhook.Exchanger
	call  control.BrowserCall
	calls func() toolEventer
	log   *slog.Logger
}

// toolEventer records a call's tool runs as webhook events
// (control.CallLog).
type toolEventer interface {
	ToolEvent(ctx context.Context, callID int64, r control.ToolRun) error
}

func (w browserTools) RunTool(ctx context.Context, call llm.ToolCall) (string, error) {
	start := time.Now()
	out, err := w.exchange(ctx, call)
	// Mic sessions (direction test) are not web calls: no event.
	if l := w.eventer(); l != nil && w.call.Direction == "web" {
		run := control.ToolRun{ToolCallID: call.ID, Name: call.Name, Arguments: json.RawMessage(call.Arguments), Output: out, Start: start, End: time.Now()}
		if err != nil {
			run.Output, run.Error = "", err.Error()
		}
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if eerr := l.ToolEvent(ectx, w.call.CallID, run); eerr != nil {
			w.log.Warn("web.tool event not recorded", "tool", call.Name, "err", eerr)
		}
		cancel()
	}
	return out, err
}

func (w browserTools) eventer() toolEventer {
	if w.calls == nil {
		return nil
	}
	return w.calls()
}

// exchange is the blocking web.tool exchange of one tool call.
func (w browserTools) exchange(ctx context.Context, call llm.ToolCall) (string, error) {
	agentID := w.call.AgentID
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	res, err := w.x.Tool(ctx, w.call.OrgID, webhook.ToolRequest{Channel: webhook.Web, CallID: w.call.CallID, AgentID: &agentID,
		ToolCallID: call.ID, Name: call.Name, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.Error != "" {
		return "", errors.New(res.Error)
	}
	return string(res.Output), nil
}

// engine adapts the agent to webrtc.Conversation.
type engine struct{ a *agent.Session }

func (e engine) WriteFrame(in []int16) error { return e.a.WriteFrame(in) }

func (e engine) ReadFrame(out []int16) {
	if e.a.ReadFrame(out) == nil {
		clear(out) // nothing playing: silence, which is not even encoded
	}
}

// run drives the call until it ends, then records how it ended.
func (bc *browserCall) run(sess *webrtc.Session) {
	if err := sess.Run(engine{bc.agent}); err != nil {
		bc.log.Warn("browser call engine failed", "err", err)
	}
	reason, st := sess.End()
	bc.b.stats.done(bc.metrics)
	bc.agent.Close() // finishes the recording
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	calls := bc.b.calls.Load()
	if calls == nil {
		return
	}
	q := st.Quality
	bc.log.Info("browser call ended", "reason", reason, "setup_ms", st.SetupTime.Milliseconds(), "packets_in", q.PacketsReceived,
		"packets_out", q.PacketsSent, "loss_pct", q.LossPercent, "jitter_ms", q.JitterMs, "rtt_ms", q.RTTMs, "mos", q.MOS, "fec", st.FEC)
	if st.SetupTime == 0 {
		// The browser never connected: nothing to bill.
		if err := calls.Fail(ctx, bc.call.CallID, reason, "the browser's media never connected"); err != nil {
			bc.log.Error("record browser call end", "err", err)
		}
		return
	}
	bc.mu.Lock()
	turns := bc.turns
	bc.mu.Unlock()
	if len(turns) > 0 {
		if err := calls.Append(ctx, bc.call.CallID, turns); err != nil {
			bc.log.Warn("record transcript", "err", err)
		}
	}
	end := control.CallEnd{Status: "completed", Reason: endReason(reason), Detail: reason, At: time.Now(), Quality: callQuality(q, &bc.latency)}
	if _, err := os.Stat(filepath.Join(bc.b.blobDir, filepath.FromSlash(bc.recKey))); err == nil {
		end.RecordingKey, end.RecordingStartedAt = bc.recKey, bc.agent.Start()
	}
	if err := calls.Finish(ctx, bc.call.CallID, end); err != nil {
		bc.log.Error("record browser call end", "err", err)
	}
}

// endReason maps a session's end to the call's public end_reason.
func endReason(r string) string {
	switch r {
	case "ice_failed":
		return "connection_lost"
	case "engine_error":
		return "error"
	}
	return r
}

// widgetEvent is what the widget's events data channel carries.
type widgetEvent struct {
	Type       string `json:"type"`
	Role       string `json:"role,omitempty"`
	Text       string `json:"text"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Event implements agent.Sink: turns become the page's live transcript
// (and the call's, when they have words); the agent ending the call hangs
// up. It runs on the agent's loop and never blocks.
func (bc *browserCall) Event(e agent.Event) {
	sess := bc.sess.Load()
	switch ev := e.(type) {
	case agent.Turn:
		observeTurn(&bc.latency, ev.Role, ev.Start, ev.End)
		if sess != nil {
			msg, _ := json.Marshal(widgetEvent{Type: "transcript", Role: ev.Role, Text: ev.Text, DurationMS: ev.End.Sub(ev.Start).Milliseconds()})
			_ = sess.Send(msg)
		}
		if ev.Text != "" {
			bc.mu.Lock()
			bc.turns = append(bc.turns, control.CallEvent{ID: "turn-" + ev.ItemID, Kind: control.EventTurn, Role: ev.Role, Text: ev.Text,
				Start: ev.Start, End: ev.End, Interrupted: ev.Interrupted})
			bc.mu.Unlock()
		}
	case agent.Ended:
		if sess != nil {
			msg, _ := json.Marshal(widgetEvent{Type: "ended", Reason: ev.Reason})
			_ = sess.Send(msg)
			bc.b.wg.Go(func() { sess.Close(ev.Reason) })
		}
	}
}

// close ends every browser call (reason shutdown) and waits until each
// is recorded, or ctx ends.
func (b *browserFront) close(ctx context.Context) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.srv.Close()
		b.wg.Wait()
		if b.prov != nil {
			b.prov.close()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		b.log.Warn("browser calls still ending at shutdown")
	}
}
