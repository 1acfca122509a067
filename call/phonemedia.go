package call

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
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
// Config.Loopback the loopback agent, which plays each
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
	t       *Phone
	call    *sip.Call
	rtp     *rtp.Session
	agent   *agent.Session
	log     *slog.Logger
	recFile recording
	// vm is answering-machine detection (voicemail.go); nil when off.
	vm *screening

	// rec is the call's transcript, tool runs and response latency.
	rec record

	digits    chan rune
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	// lostDigits counts digits dropped because the recorder fell behind.
	lostDigits atomic.Int64
	// bridge is the transfer leg the caller is bridged to (bridge.go).
	bridge atomic.Pointer[rtp.Session]

	// Quality (quality.go): response latency from the engine's turns
	// (rec); dead air and talk-over from the caller's frames (talk, on
	// the pacer worker) and whether the agent was playing (agentTalking).
	talk         quality.Talk
	agentTalking atomic.Bool

	// tap hands the mixed audio to live listeners (tap.go).
	tap Tap
}

func newCallMedia(t *Phone, c *sip.Call, s *rtp.Session, info callInfo, rec recording) (*callMedia, error) {
	m := &callMedia{t: t, call: c, rtp: s, log: t.log.With("call_id", c.ID()),
		recFile: rec,
		digits:  make(chan rune, 64), stop: make(chan struct{})}
	var deps agent.Deps
	var tools []agent.Tool
	if t.prov != nil {
		ct := t.tools.Resolve(Info{CallID: c.ID(), OrgID: info.orgID, AgentID: info.agentID, Agent: info.agent, Direction: c.Direction(),
			Channel: ChannelPhone, Leg: phoneLeg{c, s}})
		deps = agent.Deps{LLM: t.prov.LLM, STT: t.prov.STT, TTS: t.prov.TTS, Tools: ct}
		tools = ct.specs
	}
	deps.Recorders = t.recorders
	cfg := engineConfig(ChannelPhone, info.agent, engineCall{outbound: c.Direction() == sip.Outbound, loopback: t.prov == nil,
		maxDur: info.maxDur, model: t.model, tools: tools, recPath: rec.file})
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
	if err := s.SetSource(agentSource{a, &m.agentTalking, &m.tap}, cfg.OutputRate); err != nil {
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
	tap     *Tap
}

// HotLines implements rtp.HotObject: what the next ReadFrame touches.
func (s agentSource) HotLines() rtp.HotLister { return rtp.Lines(s.talking, s.a.OutputLines()) }

func (s agentSource) ReadFrame(dst []int16) bool {
	ok := s.a.ReadFrame(dst) != nil
	s.tap.Agent(dst, ok)
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
	m.rec.event(e)
	switch ev := e.(type) {
	case agent.Ended:
		m.call.Hangup(ev.Reason)
	case agent.ResponseDone, agent.Error:
		m.vm.agentEvent(e)
	}
}

// Close implements sip.Media.
func (m *callMedia) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.stop)
		err = m.rtp.Close() // leaves the pacer: no caller frame after this
		m.tap.Close()
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

// reportAnswer tells the control plane that the callee answered at at,
// so the call is billed from its answer even if this node is lost before
// the call ends (docs/decisions.md, "Loss of a media node"). On a
// goroutine of the call's, which Close waits for: the report comes
// before the end, and one still under way when the call ends is dropped
// (the end carries the answer too).
func (m *callMedia) reportAnswer(at time.Time) {
	ctl := m.t.link.get()
	if ctl == nil || ctl.Record == nil {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		go func() {
			select {
			case <-m.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := ctl.Record.Answered(ctx, m.call.ID(), at); err != nil && ctx.Err() == nil {
			m.log.Warn("answer not reported (the call's end carries it)", "err", err)
		}
	}()
}

// recording returns the recording's blob key and start, empty when no
// file was written.
func (m *callMedia) recording() (string, time.Time) {
	return m.recFile.ended(m.agent)
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
	k.m.tap.Caller(pcm)
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
			rec := m.t.link.Recorder()
			if rec == nil {
				m.log.Warn("dtmf not recorded: no control plane")
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := rec.Append(ctx, m.call.ID(), []calllog.CallEvent{{ID: "dtmf-" + strconv.Itoa(n), Kind: calllog.EventDTMF,
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

// phoneLeg is a phone call's Leg: its SIP dialog and RTP session.
type phoneLeg struct {
	*sip.Call
	rtp *rtp.Session
}

// SendDTMF implements Leg: 100 ms events.
func (l phoneLeg) SendDTMF(digits string) error { return l.rtp.SendDTMF(digits, 0) }
