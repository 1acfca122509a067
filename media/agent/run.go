package agent

import (
	"encoding/json"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/media"
)

// The loop's side of a response: its items and events as notes arrive
// from the generator and the speaker, and its end.

// message returns the run's assistant message item, creating and
// announcing it on first use.
func (s *Session) message(r *responseRun, part ContentType) *Item {
	if r.msg != nil {
		return r.msg
	}
	r.msg = &Item{ID: s.ids.next("item_"), Type: ItemMessage, Role: RoleAssistant, Status: StatusInProgress,
		Content: []Content{{Type: part}}}
	s.addOutput(r, r.msg)
	s.emit(ContentPartAdded{ResponseID: r.resp.ID, ItemID: r.msg.ID, OutputIndex: len(r.outputs) - 1, Part: Content{Type: part}})
	return r.msg
}

// addOutput appends an item to the run's output (and to the conversation
// unless out of band) and announces it.
func (s *Session) addOutput(r *responseRun, it *Item) {
	r.outputs = append(r.outputs, it)
	if r.resp.Conversation {
		s.insert(it, "")
	}
	s.emit(OutputItemAdded{ResponseID: r.resp.ID, OutputIndex: len(r.outputs) - 1, Item: it.clone()})
}

// segment: the speaker began a sentence (or a placeholder, or loopback
// audio). The first one creates the message item and puts the playout on
// the air.
func (s *Session) segment(n note) {
	r := n.run
	if r != s.run || r.stopped {
		return
	}
	if r.msg == nil {
		s.message(r, OutputAudio)
		r.playout.ItemID = r.msg.ID
		r.playout.OutputIndex = len(r.outputs) - 1
		s.play.Store(r.playout)
	}
	if n.flag || n.text == "" {
		return
	}
	delta := n.text
	if r.text.Len() > 0 {
		delta = " " + delta
	}
	r.text.WriteString(delta)
	s.emit(TextDelta{ResponseID: r.resp.ID, ItemID: r.msg.ID, OutputIndex: r.playout.OutputIndex, Audio: true, Delta: delta})
}

// textDelta: more text of a text-only answer.
func (s *Session) textDelta(n note) {
	r := n.run
	if r != s.run || r.stopped {
		return
	}
	s.message(r, OutputText)
	r.text.WriteString(n.text)
	s.emit(TextDelta{ResponseID: r.resp.ID, ItemID: r.msg.ID, OutputIndex: len(r.outputs) - 1, Delta: n.text})
}

// toolCall: the model called a function.
func (s *Session) toolCall(n note) {
	r := n.run
	if r != s.run || r.stopped {
		return
	}
	c := *n.call
	if c.Arguments == "" {
		c.Arguments = "{}"
	}
	s.emit(ToolCalled{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, At: s.now()})
	if c.Name == EndCallTool && s.cfg.EndCall {
		r.endCall = true
		return
	}
	if c.ID == "" {
		c.ID = s.ids.next("call_")
	}
	// Added in progress with no arguments, completed once they are done,
	// as OpenAI's server does: @openai/agents-realtime runs a tool for
	// every output_item event whose function_call is completed, so a
	// completed item in output_item.added ran each tool twice.
	it := &Item{ID: s.ids.next("item_"), Type: ItemFunctionCall, Status: StatusInProgress, CallID: c.ID, Name: c.Name}
	s.addOutput(r, it)
	idx := len(r.outputs) - 1
	it.Status, it.Arguments = StatusCompleted, c.Arguments
	s.emit(ArgumentsDelta{ResponseID: r.resp.ID, ItemID: it.ID, CallID: c.ID, OutputIndex: idx, Delta: c.Arguments})
	s.emit(ArgumentsDone{ResponseID: r.resp.ID, ItemID: it.ID, CallID: c.ID, OutputIndex: idx, Name: c.Name, Arguments: c.Arguments})
	s.emit(OutputItemDone{ResponseID: r.resp.ID, OutputIndex: idx, Item: it.clone()})
	r.calls = append(r.calls, c)
}

// genDone: the model finished (or failed).
func (s *Session) genDone(n note) {
	r := n.run
	if r != s.run || r.stopped {
		return
	}
	r.genDone = true
	r.finish = n.text
	r.genErr = n.err
	if n.usage != nil {
		r.resp.Usage = Usage{InputTokens: n.usage.PromptTokens, OutputTokens: n.usage.CompletionTokens, TotalTokens: n.usage.TotalTokens}
	}
	if n.err != nil && r.ctx.Err() == nil {
		s.log.Warn("model failed", "response_id", r.resp.ID, "err", n.err)
	}
	s.maybeFinish(r)
}

// speakerDone: the speaker returned; a playout that never went on the
// air (no sentence: a tool-only answer) is done too.
func (s *Session) speakerDone(n note) {
	r := n.run
	if r != s.run || r.stopped {
		return
	}
	r.speakerDone = true
	if r.msg == nil {
		r.audioDone = true
	}
	s.maybeFinish(r)
}

// maybeFinish ends the run once the model is done and its audio played.
func (s *Session) maybeFinish(r *responseRun) {
	if r != s.run || r.stopped || !r.genDone || (r.playout != nil && !r.audioDone) {
		return
	}
	status, reason := ResponseCompleted, ""
	switch {
	case r.genErr != nil && r.msg == nil && len(r.calls) == 0:
		status = ResponseFailed
		r.resp.Error = "The model could not answer."
	case r.finish == "length":
		status, reason = ResponseIncomplete, ReasonMaxTokens
	case r.finish == "content_filter":
		status, reason = ResponseIncomplete, ReasonContentFilter
	}
	r.stopped = true
	s.finalize(r, status, reason)
}

// stopRun ends a run early: its audio stops at once and its answer is cut
// to what was played.
func (s *Session) stopRun(r *responseRun, status, reason string) {
	if r != s.run || r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	if r.playout != nil {
		r.playout.stop()
	}
	if s.interrupt != nil && s.interrupt.run == r {
		s.interrupt = nil
	}
	s.finalize(r, status, reason)
}

// finalize closes the run's items, reports response.done and starts what
// follows (tool execution, a pending answer, the end of the call).
func (s *Session) finalize(r *responseRun, status, reason string) {
	s.play.CompareAndSwap(r.playout, nil)
	r.resp.Status, r.resp.Reason = status, reason
	now := s.now()
	if it := r.msg; it != nil {
		idx := 0
		for i, o := range r.outputs {
			if o == it {
				idx = i
			}
		}
		c := &it.Content[0]
		cut := status == ResponseCancelled
		start, end := now, now
		if p := r.playout; p != nil {
			rate := int64(p.Rate)
			played := p.Played()
			if r.truncateMS >= 0 {
				played = min(played, r.truncateMS*rate/1000)
			}
			segs := p.segments()
			if cut {
				c.Transcript = spokenText(segs, played)
			} else {
				c.Transcript = r.text.String()
			}
			c.AudioMS = played * 1000 / rate
			s.audio[it.ID] = &itemAudio{segs: segs, rate: p.Rate, played: played}
			if at := p.firstAt.Load(); at != 0 {
				start = time.Unix(0, at)
			}
			if at := p.lastAt.Load(); cut && at != 0 {
				// Cut short: the turn ends with the last frame the caller
				// heard. The engine decides later (a barge-in waits for
				// the caller's words, a hang-up for the call's end).
				if e := time.Unix(0, at).Add(media.FrameDuration); e.Before(now) {
					end = e
				}
			}
			s.emit(AudioDone{ResponseID: r.resp.ID, ItemID: it.ID, OutputIndex: idx})
			s.emit(TextDone{ResponseID: r.resp.ID, ItemID: it.ID, OutputIndex: idx, Audio: true, Text: c.Transcript})
		} else {
			c.Text = r.text.String()
			s.emit(TextDone{ResponseID: r.resp.ID, ItemID: it.ID, OutputIndex: idx, Text: c.Text})
		}
		it.Status = StatusCompleted
		if cut {
			it.Status = StatusIncomplete
		}
		s.emit(ContentPartDone{ResponseID: r.resp.ID, ItemID: it.ID, OutputIndex: idx, Part: *c})
		s.emit(OutputItemDone{ResponseID: r.resp.ID, OutputIndex: idx, Item: it.clone()})
		if reason == ReasonTurnDetected && r.playout != nil {
			// A barge-in cut the item: tell the client how much it holds.
			s.emit(ItemTruncated{ItemID: it.ID, AudioEndMS: c.AudioMS})
		}
		if text := it.text(); text != "" || r.playout != nil {
			s.emit(Turn{ItemID: it.ID, Role: RoleAssistant, Text: text, Start: start, End: end, Interrupted: cut})
		}
	}
	s.emit(ResponseDone{Response: r.snapshot()})
	if r.playout != nil && r.refs.Add(-1) == 0 {
		r.playout.release()
	}
	s.run = nil
	switch {
	case r.endCall:
		s.end("agent_end")
	case status == ResponseCompleted && len(r.calls) > 0 && s.deps.Tools != nil:
		s.runTools(r.calls)
	case s.pending != nil:
		o := *s.pending
		s.pending = nil
		s.startRun(o)
	}
}

// runTools executes server-side tools and answers with their outputs.
func (s *Session) runTools(calls []llm.ToolCall) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for i, c := range calls {
			out, err := s.deps.Tools.RunTool(s.ctx, c)
			if s.ctx.Err() != nil {
				return
			}
			s.post(note{kind: nToolOutput, call: &calls[i], text: out, err: err, flag: i == len(calls)-1})
		}
	}()
}

// toolOutput: a server-side tool answered; after the last one of a batch
// the agent answers with the results.
func (s *Session) toolOutput(n note) {
	out := n.text
	if n.err != nil {
		b, _ := json.Marshal(map[string]string{"error": n.err.Error()})
		out = string(b)
	}
	it := &Item{ID: s.ids.next("item_"), Type: ItemFunctionCallOutput, Status: StatusCompleted, CallID: n.call.ID, Output: out}
	prev, _ := s.insert(it, "")
	s.emit(ItemAdded{Item: it.clone(), PreviousItemID: prev})
	s.emit(ToolResult{CallID: n.call.ID, Name: n.call.Name, Output: out, IsError: n.err != nil, At: s.now()})
	if n.flag && !s.ended {
		if s.run != nil {
			s.pending = &responseOpts{audio: true}
			return
		}
		s.startRun(responseOpts{audio: true})
	}
}

// ResponseOptions are a client's response.create parameters.
type ResponseOptions struct {
	// TextOnly answers in text, without audio.
	TextOnly bool
	// Instructions override the session's for this answer.
	Instructions string
	// OutOfBand keeps the answer out of the conversation
	// (conversation: "none").
	OutOfBand bool
	Metadata  map[string]string
	// MaxOutputTokens caps the answer; 0 keeps the session's.
	MaxOutputTokens int
}

// CreateResponse asks for an answer (response.create). While another
// response is active it is refused with an Error event.
func (s *Session) CreateResponse(eventID string, o ResponseOptions) error {
	return s.do(func() {
		if s.ended {
			return
		}
		if s.run != nil {
			s.emit(Error{EventID: eventID, Code: "conversation_already_has_active_response",
				Message: "Conversation already has an active response in progress: " + s.run.resp.ID + "."})
			return
		}
		opts := responseOpts{eventID: eventID, audio: !o.TextOnly, instructions: o.Instructions, outOfBand: o.OutOfBand,
			metadata: o.Metadata, maxTokens: o.MaxOutputTokens}
		if s.cfg.Loopback {
			opts.audio, opts.loop = true, []int16{}
		}
		s.startRun(opts)
	})
}

// Say speaks text as is, as an assistant answer: an opening held back
// until the callee is known, a voicemail message. Like CreateResponse it
// is refused with an Error event while another response is active, and
// in loopback, which has no voice.
func (s *Session) Say(eventID, text string) error {
	return s.do(func() {
		switch {
		case s.ended:
		case s.cfg.Loopback:
			s.emit(Error{EventID: eventID, Code: "say_unavailable", Message: "The loopback engine has no voice."})
		case s.run != nil:
			s.emit(Error{EventID: eventID, Code: "conversation_already_has_active_response",
				Message: "Conversation already has an active response in progress: " + s.run.resp.ID + "."})
		default:
			s.startRun(responseOpts{eventID: eventID, audio: true, fixed: text})
		}
	})
}

// CancelResponse cancels the active response (response.cancel); an empty
// responseID means whichever is active.
func (s *Session) CancelResponse(eventID, responseID string) error {
	return s.do(func() {
		r := s.run
		if r == nil || (responseID != "" && responseID != r.resp.ID) {
			s.emit(Error{EventID: eventID, Code: "response_cancel_not_active", Message: "Cancellation failed: no active response found."})
			return
		}
		s.stopRun(r, ResponseCancelled, ReasonClientCancelled)
	})
}
