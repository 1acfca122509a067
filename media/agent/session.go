package agent

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/media"
)

// Session is one call's conversation engine. See the package documentation
// for its goroutines and which methods each side may call.
type Session struct {
	cfg  Config
	log  *slog.Logger
	deps Deps
	sink Sink

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closed    atomic.Bool

	cmds     chan func()
	notes    chan note
	playDone chan struct{}
	spare    chan []int16 // a buffer for the next committed turn (takeSpare)
	freeTurn chan []int16 // a turn's buffer nothing reads any more (recycleTurn)
	sttJobs  chan sttJob

	// Shared with the pacer (ReadFrame).
	play     atomic.Pointer[Playout]
	speaking atomic.Bool
	far      *media.Ring // agent audio for the input side, when needFar
	needFar  bool
	// tap is the live-listen tap's feed (SetAudioTap), nil without one;
	// the pacer and the input side read it.
	tap atomic.Pointer[tapFeed]

	in input // the input goroutine's

	// The loop's.
	ids   ids
	start time.Time
	items []*Item
	// whispers is the private guidance given during the call (Whisper),
	// oldest first; loop goroutine.
	whispers  []string
	audio     map[string]*itemAudio
	spans     map[string][2]int64 // audio span (ms) of items awaiting transcription
	run       *responseRun
	interrupt *interruption
	dtmfSeq   int    // in-band key presses reported (DTMF.Seq)
	userItem  string // announced with speech_started, used by the commit
	// partial is the live turn whose partial hypotheses become
	// transcription deltas, and sent the text sent as deltas per item,
	// until its transcript (partialText).
	partial  partialState
	sent     map[string]string
	pending  *responseOpts
	td       *TurnDetection
	checkins int
	ended    bool
	rec      *recorder
	ownRecs  *Recorders // the recording's writer when Deps had none; closed by Close
}

// itemAudio is what a finished assistant audio item's truncation needs.
type itemAudio struct {
	segs   []segment
	rate   int
	played int64
}

// interruption is a barge-in awaiting its verdict: the caller's turn item
// whose words decide whether the paused run resumes.
type interruption struct {
	run    *responseRun
	itemID string
}

// New starts a session for one call: its loop goroutine, its STT worker,
// and, with SpeakFirst, the agent's opening. Events go to sink. Close it
// when the call ends.
func New(cfg Config, log *slog.Logger, deps Deps, sink Sink) (*Session, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, fmt.Errorf("agent: sink: %w", ErrConfig)
	}
	if !cfg.Loopback {
		switch {
		case deps.LLM == nil:
			return nil, fmt.Errorf("agent: LLM: %w", ErrNoProvider)
		case deps.STT == nil:
			return nil, fmt.Errorf("agent: STT: %w", ErrNoProvider)
		case deps.TTS == nil:
			return nil, fmt.Errorf("agent: TTS: %w", ErrNoProvider)
		}
	}
	if log == nil {
		log = slog.Default()
	}
	var tag [5]byte
	_, _ = rand.Read(tag[:])
	s := &Session{
		cfg: cfg, log: log, deps: deps, sink: sink,
		cmds: make(chan func(), 64), notes: make(chan note, 256), playDone: make(chan struct{}, 1), spare: make(chan []int16, 1), freeTurn: make(chan []int16, 1),
		sttJobs: make(chan sttJob, 32),
		ids:     ids{tag: strings.ToLower(base32.StdEncoding.EncodeToString(tag[:]))},
		audio:   map[string]*itemAudio{}, spans: map[string][2]int64{},
		start: cfg.Now(),
	}
	// The agent's audio as played goes to the input side for the echo
	// canceller and for the echo gate (echo.go), which holds with or
	// without the canceller (a browser cancels its own echo). Loopback
	// sessions, the media path's load test, have neither.
	s.needFar = cfg.DSP.EchoCancellation || !cfg.Loopback
	if s.needFar {
		s.far, _ = media.NewRing(10 * media.SamplesPerFrame(cfg.OutputRate))
	}
	if err := s.in.init(s); err != nil {
		return nil, err
	}
	if cfg.RecordPath != "" {
		recs := deps.Recorders
		if recs == nil {
			recs = NewRecorders(1)
			s.ownRecs = recs
		}
		rec, err := newRecorder(recs, cfg.RecordPath, cfg.OutputRate, cfg.InputRate)
		if err != nil {
			s.in.close()
			return nil, err
		}
		s.rec = rec
	}
	if td := cfg.TurnDetection; td != nil {
		c := *td
		s.td = &c
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.loop()
	if !cfg.Loopback {
		s.wg.Add(1)
		go s.transcriber()
	}
	return s, nil
}

// Start returns when the session started (its recording's first sample).
func (s *Session) Start() time.Time { return s.start }

// Close ends the session: it cancels whatever is running, waits for every
// goroutine the session started, and finishes the recording. The input
// goroutine must have stopped calling WriteFrame and the pacer calling
// ReadFrame. Close is idempotent.
func (s *Session) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel()
		s.wg.Wait()
		s.play.Store(nil)
		s.in.close()
		if s.rec != nil {
			err = s.rec.close()
		}
		if s.ownRecs != nil {
			s.ownRecs.Close()
		}
		if f := s.tap.Load(); f != nil {
			f.close()
		}
	})
	return err
}

// do runs f on the loop goroutine; it is how transport commands reach the
// conversation state. It returns ErrClosed after Close.
func (s *Session) do(f func()) error {
	if s.closed.Load() {
		return ErrClosed
	}
	select {
	case s.cmds <- f:
		return nil
	case <-s.ctx.Done():
		return ErrClosed
	}
}

// post hands a note to the loop, from any goroutine but the loop's.
func (s *Session) post(n note) {
	select {
	case s.notes <- n:
	case <-s.ctx.Done():
	}
}

// emit sends an event to the sink; loop goroutine only.
func (s *Session) emit(e Event) { s.sink.Event(e) }

// now is the session's clock.
func (s *Session) now() time.Time { return s.cfg.Now() }

// loop owns the conversation: it runs commands and notes one at a time.
func (s *Session) loop() {
	defer s.wg.Done()
	var deadline <-chan time.Time
	if s.cfg.MaxDuration > 0 {
		t := time.NewTimer(s.cfg.MaxDuration)
		defer t.Stop()
		deadline = t.C
	}
	switch {
	case s.cfg.SpeakFirst && s.cfg.Loopback:
		// Loopback has no voice and no model: there is nothing to open
		// with until the caller speaks.
	case s.cfg.SpeakFirst:
		if s.cfg.FirstMessage != "" {
			s.startRun(responseOpts{audio: true, fixed: s.cfg.FirstMessage})
		} else {
			s.startRun(responseOpts{audio: true})
		}
	}
	for {
		select {
		case <-s.ctx.Done():
			if s.run != nil {
				s.stopRun(s.run, ResponseCancelled, ReasonClientCancelled)
			}
			return
		case f := <-s.cmds:
			f()
		case n := <-s.notes:
			s.handle(n)
		case <-s.playDone:
			if r := s.run; r != nil && r.playout != nil && r.playout.state.Load() == playFinished {
				r.audioDone = true
				s.maybeFinish(r)
			}
		case <-deadline:
			s.end("timeout")
		}
	}
}

// end reports the session ended the call, once.
func (s *Session) end(reason string) {
	if s.ended {
		return
	}
	s.ended = true
	if s.run != nil {
		s.stopRun(s.run, ResponseCancelled, ReasonClientCancelled)
	}
	s.emit(Ended{Reason: reason})
}

// ReadFrame is the pacer's side: it fills dst, one frame at OutputRate,
// with the agent's next 20 ms of speech and returns the playout it belongs
// to, or returns nil (dst untouched) when the agent is silent. It never
// blocks and allocates nothing; call it from one goroutine, once per tick.
func (s *Session) ReadFrame(dst []int16) *Playout {
	p := s.play.Load()
	var ok, finished bool
	if p != nil {
		ok, finished = p.read(dst, time.Now())
	}
	if ok != s.speaking.Load() {
		s.speaking.Store(ok)
	}
	if s.needFar && ok {
		s.far.Write(dst)
	}
	if s.rec != nil {
		if ok {
			s.rec.tick(dst)
		} else {
			s.rec.tick(nil)
		}
	}
	if f := s.tap.Load(); f != nil {
		f.tick(dst, ok)
	}
	if finished {
		select {
		case s.playDone <- struct{}{}:
		default:
		}
	}
	if !ok {
		return nil
	}
	return p
}

// Speaking reports whether the agent's audio was playing at the last
// ReadFrame.
func (s *Session) Speaking() bool { return s.speaking.Load() }

// OutputRate returns the rate of ReadFrame's audio.
func (s *Session) OutputRate() int { return s.cfg.OutputRate }

// tools returns the function tools offered to the model.
func (s *Session) tools() []llm.Tool {
	t := s.cfg.Tools
	if g, ok := s.deps.Tools.(ToolGrower); ok {
		t = append(t[:len(t):len(t)], g.GrownTools()...)
	}
	if s.cfg.EndCall {
		t = append(t[:len(t):len(t)], llm.Tool{Name: EndCallTool,
			Description: "End the call. Use it after saying goodbye, when the caller is done or asks to hang up.",
			Parameters:  []byte(`{"type":"object","properties":{}}`)})
	}
	return t
}
