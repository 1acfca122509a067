package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
	"github.com/voiced/voiced/media/webrtc"
)

// Browser is the browser front door: media/webrtc behind the control
// plane's widget and mic-session endpoints (control.BrowserMedia). Each
// call's session is driven by the conversation engine (media/agent) with
// the agent's configuration and the node's providers; with
// Config.Loopback (or no providers) it runs in loopback as phone calls
// do: each caller turn is played back, the whole media path runs, and
// the call is recorded and billed.
//
// Goroutines: one per call runs the session's frame loop and then reports
// the call's end to the control plane; Close ends every call and waits
// for them.
type Browser struct {
	srv     *webrtc.Server
	link    *Link
	blobDir string
	log     *slog.Logger
	// prov is nil in loopback; tools is the node's tool chain.
	prov  *Providers
	tools *Chain
	model string

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	// stats counts the calls' media for /metrics (quality.go).
	stats *Stats
	// recorders writes the calls' recordings (the node's, closed after us).
	recorders *agent.Recorders
	// calls are the calls in progress by id (*browserCall), for whisper
	// and listen.
	calls sync.Map
}

// NewBrowser opens the WebRTC UDP port, its calls sent on pacer. When
// the port cannot be opened and was not required (another voiced on the
// machine), it returns nil, nil: the node runs without browser calls.
func NewBrowser(cfg Config, log *slog.Logger, pacer *pace.Pacer, link *Link, prov *Providers, tools *Chain, stats *Stats, recs *agent.Recorders) (*Browser, error) {
	cfg = cfg.withDefaults()
	c := cfg.Browser
	wc := webrtc.Config{UDPAddr: c.UDPAddr, MaxSessions: c.MaxSessions, InputRate: ChannelBrowser.rate, OutputRate: ChannelBrowser.rate,
		PublicIPs: c.PublicIPs, TURNSecret: c.TURNSecret, TURNCredentialTTL: c.TURNTTL}
	if len(c.TURN) > 0 {
		wc.ICEServers = []webrtc.ICEServer{{URLs: c.TURN, Username: c.TURNUser, Credential: c.TURNPassword}}
	}
	if host, _, err := net.SplitHostPort(c.UDPAddr); err == nil {
		ip := net.ParseIP(host)
		wc.IncludeLoopback = host == "" || host == "localhost" || (ip != nil && (ip.IsLoopback() || ip.IsUnspecified()))
	}
	srv, err := webrtc.New(wc, log.With("component", "webrtc"), pacer)
	if errors.Is(err, webrtc.ErrBadConfig) {
		return nil, fmt.Errorf("invalid --webrtc-* settings: %w", err)
	}
	if err != nil {
		if c.AddrRequired {
			return nil, err
		}
		log.Warn("browser calls off: the WebRTC UDP port cannot be opened; set --webrtc-udp-addr", "addr", c.UDPAddr, "err", err)
		return nil, nil
	}
	if cfg.Loopback {
		prov = nil
	}
	return &Browser{srv: srv, link: link, blobDir: cfg.BlobDir, log: log, model: cfg.Model, prov: prov, tools: tools, stats: stats, recorders: recs}, nil
}

// ICEServers implements browser.ICE: the node's TURN servers with
// credentials for id (time-limited with --webrtc-turn-secret).
func (b *Browser) ICEServers(id string) ([]browser.ICEServer, time.Time) {
	servers, exp := b.srv.BrowserICEServers(id)
	out := make([]browser.ICEServer, 0, len(servers))
	for _, s := range servers {
		out = append(out, browser.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential})
	}
	return out, exp
}

// Check implements control.BrowserMedia.
func (b *Browser) Check(context.Context) error {
	if err := b.srv.Check(); err != nil {
		return fmt.Errorf("%w: %v", browser.ErrMediaUnavailable, err)
	}
	return nil
}

// browserCall is one browser call's state on this node.
type browserCall struct {
	b       *Browser
	call    control.BrowserCall
	log     *slog.Logger
	agent   *agent.Session
	sess    atomic.Pointer[webrtc.Session]
	recFile recording

	// rec is the call's transcript, tool runs and response latency.
	rec record

	// metrics are the session's counters (quality.go).
	metrics *quality.Metrics

	// tap hands the mixed audio to live listeners (tap.go).
	tap Tap
}

// Answer implements control.BrowserMedia: it starts the engine and the
// WebRTC session, and a goroutine that runs the call to its end.
func (b *Browser) Answer(ctx context.Context, c control.BrowserCall, offer string) (string, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return "", browser.ErrMediaUnavailable
	}
	b.mu.Unlock()
	rec, err := newRecording(b.blobDir, c.OrgID, c.CallID)
	if err != nil {
		return "", err
	}
	bc := &browserCall{b: b, call: c, log: b.log.With("call_id", c.CallID), recFile: rec}
	maxDur := callLimit(c.Agent, c.MaxDuration)
	var deps agent.Deps
	var tools []agent.Tool
	if b.prov != nil {
		ct := b.tools.Resolve(Info{CallID: c.CallID, OrgID: c.OrgID, AgentID: c.AgentID, Agent: c.Agent, Direction: c.Direction, Channel: ChannelBrowser})
		deps = agent.Deps{LLM: b.prov.LLM, STT: b.prov.STT, TTS: b.prov.TTS, Tools: ct}
		tools = ct.specs
	}
	cfg := engineConfig(ChannelBrowser, c.Agent, engineCall{loopback: b.prov == nil, maxDur: maxDur, model: b.model, tools: tools,
		recPath: rec.file})
	deps.Recorders = b.recorders
	bc.agent, err = agent.New(cfg, bc.log, deps, bc)
	if err != nil {
		return "", err
	}
	metrics := &quality.Metrics{}
	// The engine ends the call at its MaxDuration (reason timeout) after
	// saying so; the session's own limit is a backstop a little later.
	sess, answer, err := b.srv.Answer(ctx, offer, webrtc.SessionOptions{CallID: c.CallID, MaxDuration: withBackstop(maxDur), Metrics: metrics})
	if err != nil {
		bc.agent.Close()
		switch {
		case errors.Is(err, webrtc.ErrBadOffer):
			return "", fmt.Errorf("%w: %v", browser.ErrBadOffer, err)
		case errors.Is(err, webrtc.ErrCapacity), errors.Is(err, webrtc.ErrClosed):
			return "", fmt.Errorf("%w: %v", browser.ErrMediaUnavailable, err)
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
		return "", browser.ErrMediaUnavailable
	}
	b.stats.add(ChannelBrowser.door, metrics)
	b.calls.Store(c.CallID, bc)
	b.wg.Go(func() { bc.run(sess) })
	return answer, nil
}

// engine adapts the agent to webrtc.Conversation and feeds the call's
// tap. webrtc.Session.Run calls both methods on one goroutine, the
// caller's frame first: the tap mixes each caller frame with the agent's
// frame of the tick before (20 ms apart), which a listener cannot hear.
type engine struct {
	a   *agent.Session
	tap *Tap
}

func (e engine) WriteFrame(in []int16) error {
	if err := e.a.WriteFrame(in); err != nil {
		return err
	}
	e.tap.Caller(in)
	return nil
}

func (e engine) ReadFrame(out []int16) {
	ok := e.a.ReadFrame(out) != nil
	if !ok {
		clear(out) // nothing playing: silence, which is not even encoded
	}
	e.tap.Agent(out, ok)
}

// run drives the call until it ends, then records how it ended.
func (bc *browserCall) run(sess *webrtc.Session) {
	if err := sess.Run(engine{bc.agent, &bc.tap}); err != nil {
		bc.log.Warn("browser call engine failed", "err", err)
	}
	bc.b.calls.Delete(bc.call.CallID)
	bc.tap.Close()
	reason, st := sess.End()
	bc.b.stats.done(bc.metrics)
	bc.agent.Close() // finishes the recording
	bc.b.tools.End(bc.call.CallID)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ctl := bc.b.link.get()
	if ctl == nil {
		return
	}
	q := st.Quality
	bc.log.Info("browser call ended", "reason", reason, "setup_ms", st.SetupTime.Milliseconds(), "packets_in", q.PacketsReceived,
		"packets_out", q.PacketsSent, "loss_pct", q.LossPercent, "jitter_ms", q.JitterMs, "rtt_ms", q.RTTMs, "mos", q.MOS, "fec", st.FEC)
	if st.SetupTime == 0 {
		// The browser never connected: nothing to bill.
		if err := ctl.Finish.Fail(ctx, bc.call.CallID, reason, "the browser's media never connected"); err != nil {
			bc.log.Error("record browser call end", "err", err)
		}
		return
	}
	if turns := bc.rec.take(); len(turns) > 0 {
		if err := ctl.Record.Append(ctx, bc.call.CallID, turns); err != nil {
			bc.log.Warn("record transcript", "err", err)
		}
	}
	end := calllog.CallEnd{Status: "completed", Reason: endReason(reason), Detail: reason, At: time.Now(), Quality: callQuality(q, &bc.rec.latency)}
	end.RecordingKey, end.RecordingStartedAt = bc.recFile.ended(bc.agent)
	if err := ctl.Finish.Finish(ctx, bc.call.CallID, end); err != nil {
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
	case "shutdown":
		return "node_shutdown"
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
	bc.rec.event(e)
	switch ev := e.(type) {
	case agent.Turn:
		if sess != nil {
			msg, _ := json.Marshal(widgetEvent{Type: "transcript", Role: ev.Role, Text: ev.Text, DurationMS: ev.End.Sub(ev.Start).Milliseconds()})
			_ = sess.Send(msg)
		}
	case agent.Ended:
		if sess != nil {
			msg, _ := json.Marshal(widgetEvent{Type: "ended", Reason: ev.Reason})
			_ = sess.Send(msg)
			bc.b.wg.Go(func() { sess.Close(ev.Reason) })
		}
	}
}

// Drain refuses new browser calls and gives those in progress until ctx
// ends; Close ends the rest (end reason node_shutdown).
func (b *Browser) Drain(ctx context.Context) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	// Answer starts no call once closed is set (it checks under mu), so
	// the wait group only shrinks from here.
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close ends every browser call (reason shutdown, recorded as
// node_shutdown) and waits until each is recorded, or ctx ends.
func (b *Browser) Close(ctx context.Context) {
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
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		b.log.Warn("browser calls still ending at shutdown")
	}
}
