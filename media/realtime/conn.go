package realtime

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/ws"

	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/dsp"
	"github.com/voiced/voiced/media/pace"
)

// conn is one socket: one call. The handler goroutine that upgraded it
// is its reader (and the session's input goroutine); it also runs a writer
// goroutine and a call-log goroutine, and the pacer ticks it.
type conn struct {
	srv *Server
	log *slog.Logger
	nc  net.Conn
	rd  wsReader
	q   *outQueue
	out sender
	enc *encoder
	wg  sync.WaitGroup
	// done is closed at teardown: the writer and logger stop.
	done chan struct{}
	id   string

	org   int64
	adm   *Admission
	set   settings
	beta  bool
	live  bool
	sess  *agent.Session
	timer *time.Timer // inline start timeout

	handle  pace.Handle
	tickBuf []int16
	// playing is whether the last Tick had audio (the pacer's).
	playing bool

	binaryOutput atomic.Bool
	lastRecv     atomic.Int64
	closing      atomic.Bool

	pending      [][]byte
	pendingBytes int

	in inputPath

	endMu     sync.Mutex
	endReason string
	endDetail string

	logs      chan record
	logSeq    atomic.Uint64
	slotKey   string
	slotToken string
	recKey    string
}

func newConn(s *Server, nc net.Conn, br *bufio.Reader, org int64, set settings, beta bool) *conn {
	tag := newTag()
	c := &conn{srv: s, nc: nc, org: org, set: set, beta: beta, id: "sess_" + tag, done: make(chan struct{}),
		logs: make(chan record, 256)}
	c.log = s.log.With("session_id", c.id, "org_id", org)
	c.rd = wsReader{nc: nc, br: br, max: s.cfg.MaxMessageBytes, timeout: 2*s.cfg.PingInterval + 5*time.Second, closing: &c.closing}
	c.enc = &encoder{beta: beta, tag: tag, out: set.out, voice: set.voice, playout: set.playoutEvents}
	c.q = newOutQueue(s.cfg.MaxQueuedBytes, media.SamplesPerFrame(set.out.rate), s.cfg.DeltaFrames)
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.out.raw = raw
			c.out.rawWrite = c.out.writeOnce
		}
	}
	c.lastRecv.Store(time.Now().UnixNano())
	return c
}

// send queues an encoded event.
func (c *conn) send(b []byte) { c.q.push(outJSON, b) }

// sendErr queues an error event about client event eventID.
func (c *conn) sendErr(code, msg, param, eventID string) {
	c.send(c.enc.errorEvent("invalid_request_error", code, msg, param, eventID))
}

// setEnd records why the call ends; the first reason wins.
func (c *conn) setEnd(reason, detail string) {
	c.endMu.Lock()
	if c.endReason == "" {
		c.endReason, c.endDetail = reason, detail
	}
	c.endMu.Unlock()
}

// closeCause is why the server closes a socket (docs/decisions.md,
// "Realtime closes"): the client gets an error event of type typ with
// code and msg, then a close frame with status and reason. An empty typ
// means the error event was already sent.
type closeCause struct {
	status         ws.StatusCode
	reason         string
	typ, code, msg string
}

// The causes of a server close other than the end of the call and a
// shutdown.
var (
	causeStartFailed = closeCause{ws.StatusInternalServerError, "session could not start", "server_error", "session_start_failed",
		"The session could not start; try again."}
	causeNoUpdate = closeCause{ws.StatusPolicyViolation, "no session.update received", "invalid_request_error", "session_update_timeout",
		"No session.update arrived in time to start the session."}
	causeTooLarge = closeCause{ws.StatusMessageTooBig, "message too large", "invalid_request_error", "message_too_large",
		"A client message was larger than the server accepts."}
	causeProtocol = closeCause{ws.StatusProtocolError, "protocol error", "invalid_request_error", "protocol_error",
		"The client broke the WebSocket protocol."}
	causeIdle = closeCause{ws.StatusNormalClosure, "idle timeout", "invalid_request_error", "idle_timeout",
		"The client sent no message for too long."}
	causePingTimeout = closeCause{ws.StatusPolicyViolation, "ping timeout", "invalid_request_error", "ping_timeout",
		"The client sent nothing, not even a pong to the server's pings, for too long."}
	causeSlow = closeCause{ws.StatusPolicyViolation, "slow consumer", "invalid_request_error", "slow_consumer",
		"The client left too much of the server's output unread."}
	causeWriteTimeout = closeCause{ws.StatusPolicyViolation, "write timeout", "invalid_request_error", "write_timeout",
		"The client did not read the server's output in time."}
	// The insufficient_balance error event is sent with the client
	// event's id before the close.
	causeBalance = closeCause{status: ws.StatusPolicyViolation, reason: "insufficient balance"}
)

// endedCause is the close of a call the engine ended (end_call, silence,
// max duration, ...): reason is its end reason.
func endedCause(reason string) closeCause {
	return closeCause{ws.StatusNormalClosure, reason, "session_ended", reason, "The call ended: " + reason + "."}
}

// closeFrames appends an error event and a close frame for cause to b, as
// WebSocket frames (for a writer that bypasses the queue).
func (c *conn) closeFrames(b []byte, cause closeCause) []byte {
	if cause.typ != "" {
		b = appendFrame(b, ws.OpText, c.enc.errorEvent(cause.typ, cause.code, cause.msg, "", ""))
	}
	return appendFrame(b, ws.OpClose, closeBody(cause.status, cause.reason))
}

// requestClose starts the closing handshake from the server side: the
// cause's error event, then the close frame, after what is queued.
func (c *conn) requestClose(cause closeCause) {
	if c.closing.Swap(true) {
		return
	}
	if cause.typ != "" {
		c.q.push(outJSON, c.enc.errorEvent(cause.typ, cause.code, cause.msg, "", ""))
	}
	c.q.push(outClose, closeBody(cause.status, cause.reason))
}

// idle reports a client silent for longer than the idle timeout, or an
// inline socket never configured.
func (c *conn) idle() bool {
	return time.Since(time.Unix(0, c.lastRecv.Load())) > c.srv.cfg.IdleTimeout
}

// run serves the socket until it closes. adm is the call when it was
// admitted before the upgrade (saved agent or session token).
func (c *conn) run(adm *Admission) {
	c.wg.Add(2)
	go c.writer()
	go c.logger()
	c.send(c.enc.marshal("session.created", map[string]any{"session": c.set.sessionObject(c.id, c.beta, 0)}))
	if adm != nil {
		if err := c.start(*adm, ""); err != nil {
			c.log.Error("session start failed", "call_id", adm.CallID, "err", err)
			c.setEnd("error", "start: "+err.Error())
			c.requestClose(causeStartFailed)
		}
	} else {
		c.timer = time.AfterFunc(c.srv.cfg.StartTimeout, func() {
			c.setEnd("error", "no session.update")
			c.requestClose(causeNoUpdate)
		})
	}
	c.readLoop()
	c.teardown()
}

// readLoop reads client messages until the socket closes.
func (c *conn) readLoop() {
	for {
		m, err := c.rd.read()
		if err != nil {
			switch {
			case errors.Is(err, errTooLarge):
				c.setEnd("error", "message too large")
				c.requestClose(causeTooLarge)
				c.drainClose()
			case c.closing.Load():
			case errors.Is(err, os.ErrDeadlineExceeded):
				// Silent past the read timeout: the socket may still take
				// our error and close.
				c.setEnd("caller_hangup", "read timeout")
				c.requestClose(causePingTimeout)
				c.drainClose()
			case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
				c.setEnd("caller_hangup", "")
			default:
				c.setEnd("caller_hangup", "read: "+err.Error())
				c.requestClose(causeProtocol)
				c.drainClose()
			}
			return
		}
		switch m.op {
		case ws.OpPing:
			c.q.push(outPong, m.payload)
		case ws.OpPong:
		case ws.OpClose:
			c.setEnd("caller_hangup", "")
			if !c.closing.Swap(true) {
				code, _ := ws.ParseCloseFrameData(m.payload)
				if code.Empty() {
					code = ws.StatusNormalClosure
				}
				c.q.push(outClose, closeBody(code, ""))
			}
			return
		case ws.OpText:
			if c.closing.Load() {
				continue // closing: only the client's close matters now
			}
			c.lastRecv.Store(time.Now().UnixNano())
			c.handleText(m.payload)
		case ws.OpBinary:
			if c.closing.Load() {
				continue
			}
			c.lastRecv.Store(time.Now().UnixNano())
			if !c.live {
				c.buffer(append([]byte{0}, m.payload...))
				continue
			}
			c.feedAudio(m.payload, false, "")
		}
	}
}

// drainClose waits briefly for the client's answer to our close.
func (c *conn) drainClose() {
	_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
	for {
		var buf [512]byte
		if _, err := c.rd.br.Read(buf[:]); err != nil {
			return
		}
	}
}

// buffer keeps a client event that arrived before the call is live.
func (c *conn) buffer(msg []byte) {
	if len(c.pending) >= c.srv.cfg.MaxPending || c.pendingBytes+len(msg) > c.srv.cfg.MaxMessageBytes {
		c.sendErr("too_many_pending_events", "Too many events before the session started; send session.update first.", "", "")
		return
	}
	c.pending = append(c.pending, msg)
	c.pendingBytes += len(msg)
}

// start makes the call live: session.updated, the engine session, the
// pacer, then the buffered events in order.
func (c *conn) start(adm Admission, eventID string) error {
	if c.timer != nil {
		c.timer.Stop()
	}
	a := adm.Agent
	if !adm.Inline {
		c.set.instructions, c.set.voice = a.Prompt, a.Voice
		if a.EndpointingMS > 0 && c.set.turn != nil && c.set.turn.Type == "server_vad" {
			c.set.turn.SilenceDurationMS = a.EndpointingMS
		}
		if c.set.turn != nil {
			ir := a.Interruptible
			c.set.turn.InterruptResponse = &ir
		}
		toolsJSON, _ := jsonTools(a.Tools)
		c.set.tools, c.set.toolsJSON = a.Tools, toolsJSON
	}
	if c.set.voice == "" {
		c.set.voice = cmp.Or(a.Voice, a.Engine.Voice)
	}
	cfg, err := c.agentConfig(adm)
	if err != nil {
		return err
	}
	deps := agent.Deps{LLM: c.srv.deps.LLM, STT: c.srv.deps.STT, TTS: c.srv.deps.TTS, Recorders: c.srv.deps.Recorders}
	if !adm.Inline && c.srv.deps.Tools != nil {
		deps.Tools = c.srv.deps.Tools(adm)
	}
	c.adm = &adm
	c.log = c.log.With("call_id", adm.CallID)
	c.enc.beta, c.enc.out, c.enc.voice = c.beta, c.set.out, c.set.voice
	c.enc.transcription.Store(c.set.transcribes())
	c.binaryOutput.Store(c.set.binaryOutput)
	// session.updated goes out before the engine exists: a saved agent
	// that speaks first starts its response inside agent.New.
	ev := map[string]any{"session": c.set.sessionObject(c.id, c.beta, adm.CallID)}
	if eventID != "" {
		ev["client_event_id"] = eventID
	}
	c.send(c.enc.marshal("session.updated", ev))
	sess, err := agent.New(cfg, c.log, deps, c)
	if err != nil {
		return err
	}
	c.sess = sess
	if c.srv.deps.Started != nil {
		c.srv.deps.Started(adm.CallID, sess)
	}
	c.tickBuf = make([]int16, media.SamplesPerFrame(c.set.out.rate))
	c.q.setFrameLen(len(c.tickBuf))
	if err := c.in.init(c.set.in); err != nil {
		return err
	}
	h, err := c.srv.deps.Pacer.Register(c)
	if err != nil {
		return err
	}
	c.handle = h
	c.live = true
	pending := c.pending
	c.pending, c.pendingBytes = nil, 0
	for _, msg := range pending {
		if len(msg) > 0 && msg[0] == 0 {
			c.feedAudio(msg[1:], false, "")
			continue
		}
		c.handleText(msg)
	}
	return nil
}

// agentConfig is the engine configuration of the call: the agent's
// (Agent.Engine) with the session's settings over it.
func (c *conn) agentConfig(adm Admission) (agent.Config, error) {
	cfg := adm.Agent.Engine
	cfg.Instructions, cfg.Voice = c.set.instructions, cmp.Or(c.set.voice, cfg.Voice)
	cfg.Model, cfg.Temperature, cfg.MaxTokens = c.srv.cfg.Model, c.set.temperature, c.set.maxTokens
	cfg.OutputRate, cfg.Loopback = c.set.out.rate, c.srv.cfg.Loopback
	cfg.Tools = nil
	for _, t := range c.set.tools {
		cfg.Tools = append(cfg.Tools, agent.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	td, err := c.set.turn.detection()
	if err != nil {
		return cfg, err
	}
	cfg.TurnDetection = td
	if adm.Inline {
		switch c.set.noiseReduction {
		case "near_field":
			cfg.DSP.NoiseReduction = dsp.NearField
		case "far_field":
			cfg.DSP.NoiseReduction = dsp.FarField
		default:
			cfg.DSP.NoiseReduction = dsp.NoiseReductionOff
		}
	}
	if cfg.DSP.EchoCancellation {
		cfg.DSP.EchoDelay = c.srv.cfg.EchoDelay
	}
	if d := adm.MaxDuration; d > 0 && (cfg.MaxDuration == 0 || d < cfg.MaxDuration) {
		cfg.MaxDuration = d
	}
	if c.srv.cfg.BlobDir != "" {
		c.recKey = path.Join("recordings", strconv.FormatInt(adm.OrgID, 10), strconv.FormatInt(adm.CallID, 10)+".wav")
		cfg.RecordPath = filepath.Join(c.srv.cfg.BlobDir, filepath.FromSlash(c.recKey))
	}
	return cfg, nil
}

// Tick is the pacer's: the agent's next frame goes to the writer (in
// deltas of Config.DeltaFrames frames, the last one sealed with its last
// frame or when the audio stops). It does not block and allocates nothing.
func (c *conn) Tick(time.Time) {
	p := c.sess.ReadFrame(c.tickBuf)
	if p == nil {
		if c.playing {
			c.playing = false
			c.q.seal()
			c.sendNow()
		}
		return
	}
	ready := c.q.pushAudio(c.tickBuf, p)
	// The playout's last frame goes at once, not a tick later.
	c.playing = !p.Drained()
	if !c.playing {
		c.q.seal()
		ready = true
	}
	if ready {
		c.sendNow()
	}
}

// Event is the engine's sink: client events go to the writer, records to
// the call log; the end of the call closes the socket.
func (c *conn) Event(ev agent.Event) {
	switch v := ev.(type) {
	case agent.Turn, agent.ToolCalled, agent.ToolResult, agent.DTMF:
		c.record(ev)
	case agent.Ended:
		c.setEnd(v.Reason, "")
		c.requestClose(endedCause(v.Reason))
	default:
		for _, b := range c.enc.encode(ev) {
			c.send(b)
		}
	}
}

// record is an engine event for the call log, with its id in the call.
type record struct {
	id string
	ev agent.Event
}

// record queues a call-log record without blocking the engine.
func (c *conn) record(e agent.Event) {
	select {
	case c.logs <- record{id: "rt-" + strconv.FormatUint(c.logSeq.Add(1), 10), ev: e}:
	default:
		c.log.Warn("call log queue full, record dropped")
	}
}

// logger writes call-log records and keeps the session slot's lease.
func (c *conn) logger() {
	defer c.wg.Done()
	lease := time.NewTicker(c.srv.cfg.SlotTTL / 2)
	defer lease.Stop()
	flush := func(r record) {
		if c.adm == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.srv.deps.Calls.Record(ctx, c.adm.CallID, r.id, r.ev); err != nil {
			c.log.Warn("call log append failed", "err", err)
		}
	}
	for {
		select {
		case e := <-c.logs:
			flush(e)
		case <-lease.C:
			if c.slotToken != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := c.srv.deps.Slots.ExtendLease(ctx, c.slotKey, c.slotToken, c.srv.cfg.SlotTTL); err != nil {
					c.log.Warn("session slot lease not extended", "err", err)
				}
				cancel()
			}
		case <-c.done:
			for {
				select {
				case e := <-c.logs:
					flush(e)
				default:
					return
				}
			}
		}
	}
}

// teardown stops the call: no more ticks, the engine closed (its last
// records logged), the writer stopped, the call finished, the slot freed.
func (c *conn) teardown() {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.sess != nil {
		c.srv.deps.Pacer.Unregister(c.handle)
		if err := c.sess.Close(); err != nil {
			c.log.Warn("recording failed", "err", err)
			c.recKey = ""
		}
		c.in.close()
	}
	c.q.close()
	close(c.done)
	c.wg.Wait()
	c.nc.Close()
	if c.adm != nil {
		c.endMu.Lock()
		reason, detail := c.endReason, c.endDetail
		c.endMu.Unlock()
		if reason == "" {
			reason = "caller_hangup"
		}
		status := "completed"
		if reason == "error" {
			status = "failed"
		}
		end := CallEnd{Status: status, Reason: reason, Detail: detail, At: time.Now(), RecordingKey: c.recKey}
		if c.sess != nil {
			end.RecordingStartedAt = c.sess.Start()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.srv.deps.Calls.Finish(ctx, c.adm.CallID, end); err != nil {
			c.log.Error("call finish failed", "err", err)
		}
		cancel()
	}
	c.srv.releaseSlot(c)
}
