package agent

import (
	"slices"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/llm"
)

// find returns the index of item id in the conversation, or -1.
func (s *Session) find(id string) int {
	return slices.IndexFunc(s.items, func(it *Item) bool { return it.ID == id })
}

// insert adds it after the item named prev ("" appends, "root" puts it
// first) and returns the id of the item before it, or false when prev does
// not exist.
func (s *Session) insert(it *Item, prev string) (string, bool) {
	at := len(s.items)
	switch prev {
	case "":
	case "root":
		at = 0
	default:
		i := s.find(prev)
		if i < 0 {
			return "", false
		}
		at = i + 1
	}
	s.items = slices.Insert(s.items, at, it)
	if at == 0 {
		return "", true
	}
	return s.items[at-1].ID, true
}

// msAt returns the wall time of audio offset ms from the session start.
func (s *Session) msAt(ms int64) time.Time { return s.start.Add(time.Duration(ms) * time.Millisecond) }

// commit turns a committed input buffer into a user audio item and sends
// it to the STT (or, in loopback, plays it back).
func (s *Session) commit(n note) {
	s.spareTurn(len(n.pcm))
	id := s.userItem
	s.userItem = ""
	if id == "" {
		id = s.ids.next("item_")
	}
	it := &Item{ID: id, Type: ItemMessage, Role: RoleUser, Status: StatusCompleted,
		Content: []Content{{Type: InputAudio, AudioMS: n.b - n.a}}}
	prev, _ := s.insert(it, "")
	s.emit(InputCommitted{EventID: n.eventID, ItemID: id, PreviousItemID: prev})
	s.emit(ItemAdded{Item: it.clone(), PreviousItemID: prev})
	if s.cfg.Loopback {
		s.emit(Turn{ItemID: id, Role: RoleUser, Start: s.msAt(n.a), End: s.msAt(n.b)})
		if ir := s.interrupt; ir != nil && ir.itemID == id {
			s.interrupt = nil
			if s.run == ir.run {
				s.stopRun(ir.run, ResponseCancelled, ReasonTurnDetected)
			}
		}
		if s.run == nil && s.autoRespond() {
			s.startRun(responseOpts{audio: true, loop: n.pcm})
		}
		return
	}
	it.Content[0].AudioMS = n.b - n.a
	s.spans[id] = [2]int64{n.a, n.b}
	select {
	case s.sttJobs <- sttJob{itemID: id, pcm: n.pcm, rate: s.cfg.InputRate, live: n.live, at: time.Now()}:
	default:
		s.emit(Transcription{ItemID: id, Failed: true, Err: "transcription queue full"})
	}
}

// autoRespond says whether finished caller turns get an answer.
func (s *Session) autoRespond() bool {
	return s.td != nil && s.td.CreateResponse
}

// transcribed stores a turn's words, settles a pending barge-in, and
// answers the turn.
func (s *Session) transcribed(n note) {
	span := s.spans[n.itemID]
	delete(s.spans, n.itemID)
	i := s.find(n.itemID)
	text := strings.TrimSpace(n.text)
	defer delete(s.sent, n.itemID)
	if n.err != nil {
		s.emit(Transcription{ItemID: n.itemID, Failed: true, Err: "transcription failed"})
		s.log.Warn("transcription failed", "item_id", n.itemID, "err", n.err)
	} else {
		if i >= 0 {
			s.items[i].Content[0].Transcript = text
			s.items[i].Content[0].Transcribed = true
		}
		if rest, ok := strings.CutPrefix(text, s.sent[n.itemID]); ok && rest != "" {
			// What the deltas have not said yet (all of it when nothing
			// streamed, as OpenAI's whisper-1 sends it).
			s.emit(TranscriptionDelta{ItemID: n.itemID, Delta: rest})
		}
		s.emit(Transcription{ItemID: n.itemID, Transcript: text})
		if text != "" {
			s.emit(Turn{ItemID: n.itemID, Role: RoleUser, Text: text, Start: s.msAt(span[0]), End: s.msAt(span[1])})
		}
	}
	if ir := s.interrupt; ir != nil && ir.itemID == n.itemID {
		s.interrupt = nil
		if s.run == ir.run {
			if text == "" && !s.cfg.KeepInterruptedOnSilence && ir.run.playout.resume() {
				return // a false interruption: carry on
			}
			s.stopRun(ir.run, ResponseCancelled, ReasonTurnDetected)
		}
	}
	if text == "" || !s.autoRespond() {
		return
	}
	if s.run != nil {
		if s.td.InterruptResponse && !s.blipBeforeReply(span) {
			s.stopRun(s.run, ResponseCancelled, ReasonTurnDetected)
		} else {
			s.pending = &responseOpts{audio: true}
			return
		}
	}
	s.startRun(responseOpts{audio: true})
}

// blipBeforeReply says whether a turn that ended while the agent talks
// (span: its start, prefix padding included, and end, ms) is too short to
// cancel the reply: less speech than a barge-in's InterruptSpeech. Such a
// turn began before the agent talked, so the barge-in rule never weighed
// it: noise heard as a caller just before the reply (babble from the
// call's start, which the gate over the agent then cut to silence) or a
// word said as the agent began. It is answered after the reply instead of
// cutting it off.
func (s *Session) blipBeforeReply(span [2]int64) bool {
	r := s.run
	if r.playout == nil || r.playout.PlayedMS() == 0 {
		return false // nothing said yet: a new turn replaces the reply as before
	}
	c := s.td.Turn.WithDefaults()
	return span[1]-span[0]-c.PrefixPadding.Milliseconds() < c.InterruptSpeech.Milliseconds()
}

// messages builds the model's view of the conversation.
func (s *Session) messages(instructions string, items []*Item) []llm.Message {
	out := []llm.Message{{Role: llm.RoleSystem, Content: instructions}}
	for _, it := range items {
		switch it.Type {
		case ItemMessage:
			text := it.text()
			if text == "" {
				continue
			}
			role := llm.RoleUser
			switch it.Role {
			case RoleAssistant:
				role = llm.RoleAssistant
			case RoleSystem:
				role = llm.RoleSystem
			}
			out = append(out, llm.Message{Role: role, Content: text})
		case ItemFunctionCall:
			call := llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if last := &out[len(out)-1]; last.Role == llm.RoleAssistant && len(last.ToolCalls) > 0 {
				last.ToolCalls = append(last.ToolCalls, call)
			} else {
				out = append(out, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}})
			}
		case ItemFunctionCallOutput:
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: it.CallID, Content: it.Output})
		}
	}
	return out
}

// CreateItem adds a client item to the conversation after previousItemID
// ("" appends, "root" puts it first): a user, system or assistant message
// of text parts, or a function_call_output answering a function call.
// Refusals come back as Error events carrying eventID.
func (s *Session) CreateItem(eventID string, it Item, previousItemID string) error {
	return s.do(func() {
		fail := func(code, msg, param string) {
			s.emit(Error{EventID: eventID, Code: code, Message: msg, Param: param})
		}
		switch it.Type {
		case ItemMessage:
			if it.Role != RoleUser && it.Role != RoleSystem && it.Role != RoleAssistant {
				fail("invalid_value", "Invalid item role: expected user, system or assistant.", "item.role")
				return
			}
		case ItemFunctionCallOutput:
			if it.CallID == "" {
				fail("missing_required_parameter", "Missing required parameter: 'item.call_id'.", "item.call_id")
				return
			}
			if s.hasOutput(it.CallID) {
				// A call is answered once: a repeated output would put two
				// answers in the model's context (docs/decisions.md).
				fail("item_already_exists", "Function call '"+it.CallID+"' already has a function_call_output item.", "item.call_id")
				return
			}
		case ItemFunctionCall:
			if it.CallID == "" || it.Name == "" {
				fail("missing_required_parameter", "A function_call item needs call_id and name.", "item.call_id")
				return
			}
		default:
			fail("invalid_value", "Invalid item type: expected message, function_call or function_call_output.", "item.type")
			return
		}
		if it.ID == "" {
			it.ID = s.ids.next("item_")
		} else if s.find(it.ID) >= 0 {
			fail("item_already_exists", "Item with id '"+it.ID+"' already exists.", "item.id")
			return
		}
		if it.Status == "" {
			it.Status = StatusCompleted
		}
		c := it.clone()
		prev, ok := s.insert(&c, previousItemID)
		if !ok {
			fail("item_not_found", "Previous item with id '"+previousItemID+"' does not exist.", "previous_item_id")
			return
		}
		s.emit(ItemAdded{EventID: eventID, Item: c.clone(), PreviousItemID: prev})
		now := s.now()
		switch {
		case c.Type == ItemMessage && c.Role == RoleUser && c.text() != "":
			s.emit(Turn{ItemID: c.ID, Role: RoleUser, Text: c.text(), Start: now, End: now})
		case c.Type == ItemFunctionCallOutput:
			s.emit(ToolResult{CallID: c.CallID, Name: s.callName(c.CallID), Output: c.Output, At: now})
		}
	})
}

// hasOutput reports whether the conversation holds a function_call_output
// for callID.
func (s *Session) hasOutput(callID string) bool {
	for _, it := range s.items {
		if it.Type == ItemFunctionCallOutput && it.CallID == callID {
			return true
		}
	}
	return false
}

// callName returns the name of the function call callID, if known.
func (s *Session) callName(callID string) string {
	for i := len(s.items) - 1; i >= 0; i-- {
		if it := s.items[i]; it.Type == ItemFunctionCall && it.CallID == callID {
			return it.Name
		}
	}
	return ""
}

// DeleteItem removes an item from the conversation.
func (s *Session) DeleteItem(eventID, itemID string) error {
	return s.do(func() {
		i := s.find(itemID)
		if i < 0 {
			s.emit(Error{EventID: eventID, Code: "item_not_found", Message: "Item with id '" + itemID + "' not found.", Param: "item_id"})
			return
		}
		s.items = slices.Delete(s.items, i, i+1)
		delete(s.audio, itemID)
		s.emit(ItemDeleted{EventID: eventID, ItemID: itemID})
	})
}

// RetrieveItem reports an item (ItemRetrieved).
func (s *Session) RetrieveItem(eventID, itemID string) error {
	return s.do(func() {
		i := s.find(itemID)
		if i < 0 {
			s.emit(Error{EventID: eventID, Code: "item_not_found", Message: "Item with id '" + itemID + "' not found.", Param: "item_id"})
			return
		}
		s.emit(ItemRetrieved{EventID: eventID, Item: s.items[i].clone()})
	})
}

// TruncateItem cuts an assistant audio item to its first audioEndMS: the
// audio the client actually played. Truncating the item being spoken stops
// its audio and cancels its response.
func (s *Session) TruncateItem(eventID, itemID string, contentIndex int, audioEndMS int64) error {
	return s.do(func() {
		fail := func(code, msg, param string) {
			s.emit(Error{EventID: eventID, Code: code, Message: msg, Param: param})
		}
		i := s.find(itemID)
		if i < 0 {
			fail("item_not_found", "Item with id '"+itemID+"' not found.", "item_id")
			return
		}
		it := s.items[i]
		if it.Role != RoleAssistant || contentIndex < 0 || contentIndex >= len(it.Content) || it.Content[contentIndex].Type != OutputAudio {
			fail("invalid_value", "Only assistant audio content can be truncated.", "content_index")
			return
		}
		if audioEndMS < 0 {
			fail("invalid_value", "audio_end_ms must not be negative.", "audio_end_ms")
			return
		}
		if r := s.run; r != nil && r.msg == it && r.playout != nil {
			r.playout.stop()
			if audioEndMS > r.playout.PlayedMS() {
				audioEndMS = r.playout.PlayedMS()
			}
			r.truncateMS = audioEndMS
			s.stopRun(r, ResponseCancelled, ReasonClientCancelled)
		} else {
			a := s.audio[itemID]
			if a == nil {
				fail("invalid_value", "The item has no audio.", "item_id")
				return
			}
			if max := a.played * 1000 / int64(a.rate); audioEndMS > max {
				fail("invalid_value", "audio_end_ms is longer than the item's audio.", "audio_end_ms")
				return
			}
			it.Content[contentIndex].Transcript = spokenText(a.segs, audioEndMS*int64(a.rate)/1000)
			it.Content[contentIndex].AudioMS = audioEndMS
		}
		s.emit(ItemTruncated{EventID: eventID, ItemID: itemID, ContentIndex: contentIndex, AudioEndMS: audioEndMS})
	})
}

// partialState is the live turn whose hypotheses are being sent.
type partialState struct {
	turn uint32 // its number in the live feed
	item string // the item SpeechStarted announced for it
}

// partialText sends what a streaming STT recognized as
// conversation.item.input_audio_transcription.delta: appended text only.
// A provider's streamed answer (n.itemID) is appended text already. A live
// turn's hypothesis (n.live) may still change, above all its last word,
// which the search has not left: only the words before it are sent, and
// only while they extend what was sent; a hypothesis that revises a word
// already sent sends nothing, and the transcript (Transcription) is the
// authority. The rest of the transcript goes as a last delta when the
// deltas are a prefix of it (transcribed).
func (s *Session) partialText(n note) {
	if s.sent == nil {
		s.sent = map[string]string{}
	}
	if n.itemID != "" {
		if n.text != "" {
			s.sent[n.itemID] += n.text
			s.emit(TranscriptionDelta{ItemID: n.itemID, Delta: n.text})
		}
		return
	}
	if n.live == 0 || n.live != s.partial.turn || s.partial.item == "" {
		return // a turn whose SpeechStarted has not come, or an old one
	}
	id := s.partial.item
	words := strings.Fields(n.text)
	if len(words) < 2 {
		return
	}
	stable := words[:len(words)-1]
	sent := s.sent[id]
	have := strings.Fields(sent)
	if len(stable) <= len(have) || !slices.Equal(stable[:len(have)], have) {
		return
	}
	d := strings.Join(stable[len(have):], " ")
	if sent != "" {
		d = " " + d
	}
	s.sent[id] = sent + d
	s.emit(TranscriptionDelta{ItemID: id, Delta: d})
}
