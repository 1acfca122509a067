package agent

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
)

// responseOpts describes an answer to produce.
type responseOpts struct {
	eventID string
	// audio makes a spoken answer; else text only.
	audio bool
	// fixed is said as is instead of asking the model (first message,
	// check-ins).
	fixed string
	// loop is caller audio (at the input rate) to play back instead
	// (loopback).
	loop []int16
	// instructions overrides the session's for this answer.
	instructions string
	// outOfBand answers outside the conversation (conversation "none").
	outOfBand bool
	metadata  map[string]string
	maxTokens int
}

// responseRun is the loop's record of the response being produced. Its
// generator (the model) and speaker (the TTS) goroutines talk to the loop
// only through notes and the playout.
type responseRun struct {
	resp    *Response
	opts    responseOpts
	ctx     context.Context
	cancel  context.CancelFunc
	playout *Playout
	msg     *Item
	outputs []*Item
	text    strings.Builder

	genDone, audioDone, speakerDone, stopped bool
	finish                                   string
	genErr                                   error
	calls                                    []llm.ToolCall
	endCall                                  bool
	truncateMS                               int64 // a client truncation, -1 if none
	// refs counts who still uses the playout's ring (the speaker and the
	// loop); the last to let go returns it to the pool.
	refs atomic.Int32
}

// snapshot copies the response for an event.
func (r *responseRun) snapshot() Response {
	c := *r.resp
	c.Output = make([]Item, len(r.outputs))
	for i, it := range r.outputs {
		c.Output[i] = it.clone()
	}
	return c
}

// startRun starts producing an answer; loop goroutine.
func (s *Session) startRun(o responseOpts) *responseRun {
	if s.ended {
		return nil
	}
	if p := s.missingProvider(o); p != "" {
		s.emit(Error{EventID: o.eventID, Code: "provider_unavailable",
			Message: "This session has no " + p + ": it can only play the caller's audio back."})
		return nil
	}
	r := &responseRun{opts: o, truncateMS: -1}
	r.resp = &Response{ID: s.ids.next("resp_"), Status: ResponseInProgress, Audio: o.audio, Conversation: !o.outOfBand, Metadata: o.metadata}
	r.ctx, r.cancel = context.WithCancel(s.ctx)
	s.run = r
	s.emit(ResponseCreated{Response: r.snapshot()})
	var sentences chan string
	if o.audio {
		r.playout = newPlayout(s.cfg.OutputRate)
		r.playout.ResponseID = r.resp.ID
		r.refs.Store(2)
		sentences = make(chan string, 32)
		s.wg.Add(1)
		go s.speak(r, sentences)
	}
	switch {
	case o.loop != nil:
		r.genDone = true
		close(sentences)
	case o.fixed != "":
		r.genDone = true
		sentences <- o.fixed
		close(sentences)
	default:
		instructions := s.cfg.Instructions
		if o.instructions != "" {
			instructions = o.instructions
		}
		maxTokens := s.cfg.MaxTokens
		if o.maxTokens > 0 {
			maxTokens = o.maxTokens
		}
		req := llm.Request{Model: s.cfg.Model, Messages: s.withWhispers(s.messages(instructions, s.items)), Tools: s.tools(),
			Temperature: s.cfg.Temperature, MaxTokens: maxTokens}
		var caller string
		if !o.outOfBand {
			caller = s.callerTurn()
		}
		s.wg.Add(1)
		go s.generate(r, req, caller, sentences)
	}
	return r
}

// missingProvider names the provider an answer needs and the session was
// not given ("" when it has what it needs). Only loopback sessions lack
// providers (New requires them otherwise): they play caller audio back
// and can neither ask a model nor speak text, so the engine never calls a
// provider it does not have.
func (s *Session) missingProvider(o responseOpts) string {
	switch {
	case o.loop != nil:
		return ""
	case o.fixed == "" && s.deps.LLM == nil:
		return "model"
	case o.audio && s.deps.TTS == nil:
		return "voice"
	}
	return ""
}

// generate streams the model's answer: sentences to the speaker (or text
// deltas to the loop) and tool calls to the loop, after the context the
// tool runner adds for caller (the caller turn answered, if any).
func (s *Session) generate(r *responseRun, req llm.Request, caller string, sentences chan<- string) {
	defer s.wg.Done()
	if sentences != nil {
		defer close(sentences)
	}
	req = s.withTurnContext(r.ctx, req, caller)
	stream, err := s.deps.LLM.Stream(r.ctx, req)
	if err != nil {
		s.post(note{kind: nGenDone, run: r, err: err})
		return
	}
	defer stream.Close()
	var ch chunker
	var finish string
	var usage *llm.Usage
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if sentences != nil {
				if rest := ch.flush(); rest != "" {
					select {
					case sentences <- rest:
					case <-r.ctx.Done():
					}
				}
			}
			s.post(note{kind: nGenDone, run: r, err: err})
			return
		}
		if c.Text != "" {
			if sentences == nil {
				s.post(note{kind: nText, run: r, text: c.Text})
			} else {
				for _, piece := range ch.push(c.Text) {
					select {
					case sentences <- piece:
					case <-r.ctx.Done():
						return
					}
				}
			}
		}
		if c.ToolCall != nil {
			call := *c.ToolCall
			s.post(note{kind: nToolCall, run: r, call: &call})
		}
		if c.FinishReason != "" {
			finish = c.FinishReason
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	if sentences != nil {
		if rest := ch.flush(); rest != "" {
			select {
			case sentences <- rest:
			case <-r.ctx.Done():
			}
		}
	}
	s.post(note{kind: nGenDone, run: r, text: finish, usage: usage})
}

// speak turns the answer's sentences into audio in the playout, with a
// placeholder when the first sentence is slow.
func (s *Session) speak(r *responseRun, sentences <-chan string) {
	defer s.wg.Done()
	defer func() {
		r.playout.finish(r.ctx)
		s.post(note{kind: nSpeakerDone, run: r})
		if r.refs.Add(-1) == 0 {
			r.playout.release()
		}
	}()
	if r.opts.loop != nil {
		s.playBack(r)
		s.recycleTurn(r.opts.loop) // played: the playout holds copies
		return
	}
	var placeholder <-chan time.Time
	if len(s.cfg.Placeholders) > 0 && r.opts.fixed == "" {
		t := time.NewTimer(s.cfg.PlaceholderDelay)
		defer t.Stop()
		placeholder = t.C
	}
	buf := make([]int16, 2048)
	for {
		select {
		case text, ok := <-sentences:
			if !ok {
				return
			}
			placeholder = nil
			if err := s.say(r, text, false, buf); err != nil {
				if r.ctx.Err() == nil {
					s.log.Warn("speech synthesis failed", "response_id", r.resp.ID, "err", err)
				}
				return
			}
		case <-placeholder:
			placeholder = nil
			phrase := s.cfg.Placeholders[rand.IntN(len(s.cfg.Placeholders))]
			if err := s.say(r, phrase, true, buf); err != nil {
				return
			}
		case <-r.ctx.Done():
			return
		}
	}
}

// say synthesizes text into the playout.
func (s *Session) say(r *responseRun, text string, hidden bool, buf []int16) error {
	r.playout.beginSegment(text, hidden)
	s.post(note{kind: nSegment, run: r, text: text, flag: hidden})
	sp, err := s.deps.TTS.Synthesize(r.ctx, tts.Request{Text: text, Voice: s.cfg.Voice, Language: s.cfg.Language, SampleRate: s.cfg.OutputRate})
	if err != nil {
		return err
	}
	defer sp.Close()
	for {
		n, err := sp.Read(buf)
		if n > 0 {
			if werr := r.playout.write(r.ctx, buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// playBack writes loopback audio, resampled from the input rate to the
// output rate (a copy when they are equal, as for G.711 at 8 kHz).
func (s *Session) playBack(r *responseRun) {
	rs, err := resample.New(s.cfg.InputRate, s.cfg.OutputRate, resample.QualityLow)
	if err != nil {
		s.log.Warn("loopback resampler", "err", err)
		return
	}
	defer rs.Close()
	r.playout.beginSegment("", false)
	s.post(note{kind: nSegment, run: r})
	in := media.SamplesPerFrame(s.cfg.InputRate)
	out := make([]int16, media.SamplesPerFrame(s.cfg.OutputRate))
	for pcm := r.opts.loop; len(pcm) >= in; pcm = pcm[in:] {
		n, err := rs.ProcessTo(out, pcm[:in])
		if err != nil {
			return
		}
		if r.playout.write(r.ctx, out[:n]) != nil {
			return
		}
	}
}
