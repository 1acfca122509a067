package call

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/amd"
	"github.com/voiced/voiced/sip"
)

// Voicemail actions of an agent (control.Voicemail.Action).
const (
	voicemailHangup   = "hangup"
	voicemailLeave    = "leave_message"
	voicemailContinue = "continue"
)

// screening is answering-machine detection on one outbound call
// (docs/decisions.md, "Voicemail detection"). From the answer on, every
// caller frame the agent takes also goes to an amd.Detector; the verdict
// then decides the call per the agent's voicemail action:
//
//   - hangup: a machine is hung up on at once (end_reason voicemail);
//   - leave_message: after the beep (or the end of the greeting) the
//     agent says the voicemail message, then hangs up (voicemail);
//   - continue: nothing changes; the verdict is only recorded.
//
// With hangup and leave_message the agent is held until the verdict: it
// does not speak first and takes no turns (its input buffer keeps the
// callee's audio). A person (or an unknown verdict) releases it: the
// opening is spoken, or with the callee speaking first, the greeting
// becomes the callee's first turn. The verdict is recorded as a
// machine_detection call event.
//
// frame runs on the call's input goroutine, which owns the detector and
// may call the agent's input methods; Answered comes from the SIP side,
// agentEvent from the agent's loop.
type screening struct {
	m        *callMedia
	det      *amd.Detector
	action   string
	message  string
	loopback bool

	// hold: the agent waits for the verdict; what it was held from.
	hold         bool
	td           *agent.TurnDetection
	speakFirst   bool
	firstMessage string

	answered atomic.Int64 // Unix ns of the answer, 0 before
	leaving  atomic.Bool  // the voicemail message is being said

	// The input goroutine's.
	started, done bool
	last          amd.Result

	mu                  sync.Mutex
	verdict             amd.Result
	answerAt, verdictAt time.Time
}

// newScreening returns the screening of a call whose caller frames come
// at rate, or nil when detection does not run: inbound calls, agents
// without a voicemail action.
func newScreening(m *callMedia, info callInfo, direction string, loopback bool, rate int) (*screening, error) {
	vm := info.agent.Voicemail
	if direction != sip.Outbound {
		return nil, nil
	}
	switch vm.Action {
	case voicemailHangup, voicemailLeave, voicemailContinue:
	default:
		return nil, nil
	}
	det, err := amd.New(amd.Config{SampleRate: rate})
	if err != nil {
		return nil, err
	}
	return &screening{m: m, det: det, action: vm.Action, message: vm.Message, loopback: loopback,
		hold: vm.Action != voicemailContinue}, nil
}

// holdConfig returns the agent configuration held until the verdict:
// no opening, manual turns.
func (s *screening) holdConfig(cfg agent.Config) agent.Config {
	if s == nil || !s.hold {
		return cfg
	}
	s.td, s.speakFirst, s.firstMessage = cfg.TurnDetection, cfg.SpeakFirst, cfg.FirstMessage
	cfg.TurnDetection, cfg.SpeakFirst = nil, false
	return cfg
}

// Answered implements sip.Answerer: detection starts with the next
// frame, and the control plane learns of the answer (reportAnswer).
func (m *callMedia) Answered(at time.Time) {
	if m.vm != nil {
		m.vm.answered.Store(time.Now().UnixNano())
	}
	m.reportAnswer(at)
}

// frame takes the caller frame the agent just took; input goroutine.
func (s *screening) frame(pcm []int16) {
	if s == nil || s.done {
		return
	}
	if !s.started {
		at := s.answered.Load()
		if at == 0 {
			return // ringing: early media is not the callee
		}
		s.started = true
		s.mu.Lock()
		s.answerAt = time.Unix(0, at)
		s.mu.Unlock()
		if s.hold {
			s.m.agent.ClearInput("")
		}
	}
	r, err := s.det.Process(pcm)
	if err != nil {
		s.m.log.Warn("machine detection stopped", "err", err)
		s.decide(amd.Unknown)
		return
	}
	if r != s.last {
		s.last = r
		s.decide(r)
	}
}

// decide acts on a new verdict r; input goroutine.
func (s *screening) decide(r amd.Result) {
	machine := r.IsMachine()
	// Only leave_message listens on after Machine, for the beep.
	s.done = r.Final() || s.action != voicemailLeave
	s.mu.Lock()
	first := s.verdict == amd.Undecided
	s.verdict, s.verdictAt = r, time.Now()
	s.mu.Unlock()
	if first {
		s.m.log.Info("machine detection", "verdict", r.String(), "after_ms", s.det.DecidedAfter().Milliseconds())
	}
	switch {
	case !machine || s.action == voicemailContinue:
		s.release(r)
	case s.action == voicemailHangup:
		s.m.call.Hangup(calllog.EndReasonVoicemail)
	case s.done: // leave_message, and the greeting is over
		s.leave()
	}
}

// release lets the held agent converse: the opening, or the greeting
// answered as the callee's first turn.
func (s *screening) release(r amd.Result) {
	if !s.hold {
		return
	}
	a := s.m.agent
	if err := a.SetTurnDetection(s.td); err != nil {
		s.m.log.Warn("turn detection not restored", "err", err)
	}
	switch {
	case s.speakFirst && s.firstMessage != "":
		a.ClearInput("")
		a.Say("", s.firstMessage)
	case s.speakFirst:
		a.ClearInput("")
		a.CreateResponse("", agent.ResponseOptions{})
	case r == amd.Human:
		a.CommitInput("")
	default:
		a.ClearInput("")
	}
}

// leave says the voicemail message; its end (agentEvent) hangs up.
func (s *screening) leave() {
	s.m.agent.ClearInput("")
	if s.loopback || s.message == "" {
		s.m.log.Info("voicemail message not left: the loopback engine has no voice")
		s.m.call.Hangup(calllog.EndReasonVoicemail)
		return
	}
	s.leaving.Store(true)
	s.m.agent.Say("voicemail", s.message)
}

// agentEvent hangs up once the voicemail message was said (or refused);
// the agent's loop goroutine.
func (s *screening) agentEvent(e agent.Event) {
	if s == nil || !s.leaving.Load() {
		return
	}
	switch e.(type) {
	case agent.ResponseDone, agent.Error:
		s.m.call.Hangup(calllog.EndReasonVoicemail)
	}
}

// reachedMachine reports whether the call reached a machine it was to
// hang up on or leave a message with: such a call ends "voicemail" even
// when the machine hangs up first (a greeting that ends the call, a
// recording cut short).
func (s *screening) reachedMachine() bool {
	if s == nil || s.action == voicemailContinue {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verdict.IsMachine()
}

// event returns the verdict as a call event, if there was one.
func (s *screening) event() (calllog.CallEvent, bool) {
	if s == nil {
		return calllog.CallEvent{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.verdict == amd.Undecided {
		return calllog.CallEvent{}, false
	}
	return calllog.CallEvent{ID: "machine-detection", Kind: calllog.EventMachineDetection, At: s.verdictAt,
		Text: s.verdict.String(), Start: s.answerAt, End: s.verdictAt}, true
}
