package realtime

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/voiced/voiced/media/agent"
)

// encoder spells server events in the socket's dialect: GA names
// (response.output_audio.delta, conversation.item.added) or, for beta
// clients, the beta ones (response.audio.delta, conversation.item.created).
// It is used from the reader, the session loop and the writer at once:
// only the event counter changes, atomically.
type encoder struct {
	beta bool
	tag  string
	n    atomic.Uint64
	out  format
	// voice is echoed in response objects.
	voice string
	// playout sends the agent's pauses and resumes, which OpenAI's API
	// does not have (voiced_events=playout).
	playout bool
	// transcription: the session's input_audio_transcription is set, so
	// the caller's words stream as transcription deltas, as OpenAI sends
	// them only then.
	transcription atomic.Bool
}

// id returns a fresh event id.
func (e *encoder) id() string {
	return "event_" + e.tag + strconv.FormatUint(e.n.Add(1), 36)
}

// appendID appends a fresh event id to b (the audio path, without
// allocating).
func (e *encoder) appendID(b []byte) []byte {
	b = append(b, "event_"...)
	b = append(b, e.tag...)
	return strconv.AppendUint(b, e.n.Add(1), 36)
}

func (e *encoder) name(ga, beta string) string {
	if e.beta {
		return beta
	}
	return ga
}

// marshal renders an event object with its type and a fresh event id.
func (e *encoder) marshal(typ string, fields map[string]any) []byte {
	fields["type"] = typ
	fields["event_id"] = e.id()
	b, err := json.Marshal(fields)
	if err != nil {
		// Every value here is marshalable; keep the socket alive anyway.
		b, _ = json.Marshal(map[string]any{"type": "error", "event_id": e.id(),
			"error": map[string]any{"type": "server_error", "code": "encoding_failed", "message": "An event could not be encoded."}})
	}
	return b
}

// errorEvent renders an error event about the client event eventID.
func (e *encoder) errorEvent(typ, code, msg, param, eventID string) []byte {
	er := map[string]any{"type": typ, "code": code, "message": msg, "param": nil, "event_id": nil}
	if param != "" {
		er["param"] = param
	}
	if eventID != "" {
		er["event_id"] = eventID
	}
	return e.marshal("error", map[string]any{"error": er})
}

func (e *encoder) contentType(t agent.ContentType) string {
	switch t {
	case agent.InputText:
		return "input_text"
	case agent.InputAudio:
		return "input_audio"
	case agent.OutputText:
		return e.name("output_text", "text")
	}
	return e.name("output_audio", "audio")
}

// part renders a content part of an item.
func (e *encoder) part(c agent.Content) map[string]any {
	p := map[string]any{"type": e.contentType(c.Type)}
	switch c.Type {
	case agent.InputText, agent.OutputText:
		p["text"] = c.Text
	case agent.InputAudio:
		if c.Transcribed {
			p["transcript"] = c.Transcript
		} else {
			p["transcript"] = nil
		}
	case agent.OutputAudio:
		p["transcript"] = c.Transcript
	}
	return p
}

// eventPart renders a part for response.content_part events, whose part
// types are "audio" and "text" in both dialects.
func (e *encoder) eventPart(c agent.Content) map[string]any {
	if c.Type == agent.OutputText {
		return map[string]any{"type": "text", "text": c.Text}
	}
	return map[string]any{"type": "audio", "transcript": c.Transcript}
}

func (e *encoder) item(it agent.Item) map[string]any {
	o := map[string]any{"id": it.ID, "object": "realtime.item", "type": it.Type, "status": it.Status}
	switch it.Type {
	case agent.ItemMessage:
		o["role"] = it.Role
		parts := make([]any, len(it.Content))
		for i, c := range it.Content {
			parts[i] = e.part(c)
		}
		o["content"] = parts
	case agent.ItemFunctionCall:
		o["call_id"], o["name"], o["arguments"] = it.CallID, it.Name, it.Arguments
	case agent.ItemFunctionCallOutput:
		o["call_id"], o["output"] = it.CallID, it.Output
	}
	return o
}

func (e *encoder) response(r agent.Response) map[string]any {
	out := make([]any, len(r.Output))
	for i, it := range r.Output {
		out[i] = e.item(it)
	}
	o := map[string]any{"object": "realtime.response", "id": r.ID, "status": r.Status, "output": out,
		"conversation_id": nil, "metadata": nil, "usage": nil, "status_details": nil}
	if r.Conversation {
		o["conversation_id"] = "conv_" + e.tag
	}
	if r.Metadata != nil {
		o["metadata"] = r.Metadata
	}
	mods := []string{"audio"}
	if !r.Audio {
		mods = []string{"text"}
	}
	if e.beta {
		if r.Audio {
			mods = []string{"audio", "text"}
		}
		o["modalities"] = mods
		o["output_audio_format"] = e.out.betaName()
		o["voice"] = e.voice
	} else {
		o["output_modalities"] = mods
		o["audio"] = map[string]any{"output": map[string]any{"format": map[string]any{"type": e.out.gaName(), "rate": e.out.rate}, "voice": e.voice}}
	}
	switch r.Status {
	case agent.ResponseCancelled, agent.ResponseIncomplete:
		o["status_details"] = map[string]any{"type": r.Status, "reason": r.Reason}
	case agent.ResponseFailed:
		o["status_details"] = map[string]any{"type": r.Status, "error": map[string]any{"type": "server_error", "code": "response_failed", "message": r.Error}}
	}
	if r.Status != agent.ResponseInProgress {
		u := r.Usage
		o["usage"] = map[string]any{"total_tokens": u.TotalTokens, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"input_token_details":  map[string]int{"text_tokens": u.InputTokens, "audio_tokens": 0, "cached_tokens": 0},
			"output_token_details": map[string]int{"text_tokens": u.OutputTokens, "audio_tokens": 0}}
	}
	return o
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// encode renders an engine event as the client events it stands for, or
// nil for events that stay on the server (the call log's records).
func (e *encoder) encode(ev agent.Event) [][]byte {
	one := func(typ string, f map[string]any) [][]byte { return [][]byte{e.marshal(typ, f)} }
	switch v := ev.(type) {
	case agent.SpeechStarted:
		return one("input_audio_buffer.speech_started", map[string]any{"audio_start_ms": v.AudioStartMS, "item_id": v.ItemID})
	case agent.PlayoutPaused:
		if e.playout {
			return one("voiced.output_audio.paused", map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID, "audio_ms": v.AudioMS})
		}
	case agent.PlayoutResumed:
		if e.playout {
			return one("voiced.output_audio.resumed", map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID, "audio_ms": v.AudioMS})
		}
	case agent.SpeechStopped:
		return one("input_audio_buffer.speech_stopped", map[string]any{"audio_end_ms": v.AudioEndMS, "item_id": v.ItemID})
	case agent.InputCommitted:
		return one("input_audio_buffer.committed", map[string]any{"item_id": v.ItemID, "previous_item_id": nullable(v.PreviousItemID)})
	case agent.InputCleared:
		return one("input_audio_buffer.cleared", map[string]any{})
	case agent.InputTimeout:
		return one("input_audio_buffer.timeout_triggered", map[string]any{"item_id": v.ItemID, "audio_start_ms": v.AudioStartMS, "audio_end_ms": v.AudioEndMS})
	case agent.ItemAdded:
		return e.itemAdded(v.Item, v.PreviousItemID, true)
	case agent.ItemDeleted:
		return one("conversation.item.deleted", map[string]any{"item_id": v.ItemID})
	case agent.ItemTruncated:
		return one("conversation.item.truncated", map[string]any{"item_id": v.ItemID, "content_index": v.ContentIndex, "audio_end_ms": v.AudioEndMS})
	case agent.ItemRetrieved:
		return one("conversation.item.retrieved", map[string]any{"item": e.item(v.Item)})
	case agent.TranscriptionDelta:
		if e.transcription.Load() {
			return one("conversation.item.input_audio_transcription.delta", map[string]any{"item_id": v.ItemID, "content_index": v.ContentIndex,
				"delta": v.Delta})
		}
	case agent.Transcription:
		if v.Failed {
			return one("conversation.item.input_audio_transcription.failed", map[string]any{"item_id": v.ItemID, "content_index": v.ContentIndex,
				"error": map[string]any{"type": "transcription_error", "code": "transcription_failed", "message": v.Err}})
		}
		return one("conversation.item.input_audio_transcription.completed", map[string]any{"item_id": v.ItemID, "content_index": v.ContentIndex,
			"transcript": v.Transcript, "usage": map[string]any{"type": "duration", "seconds": 0}})
	case agent.ResponseCreated:
		return one("response.created", map[string]any{"response": e.response(v.Response)})
	case agent.ResponseDone:
		return one("response.done", map[string]any{"response": e.response(v.Response)})
	case agent.OutputItemAdded:
		out := one("response.output_item.added", map[string]any{"response_id": v.ResponseID, "output_index": v.OutputIndex, "item": e.item(v.Item)})
		return append(out, e.itemAdded(v.Item, "", false)...)
	case agent.OutputItemDone:
		out := one("response.output_item.done", map[string]any{"response_id": v.ResponseID, "output_index": v.OutputIndex, "item": e.item(v.Item)})
		if !e.beta {
			out = append(out, e.marshal("conversation.item.done", map[string]any{"item": e.item(v.Item), "previous_item_id": nil}))
		}
		return out
	case agent.ContentPartAdded:
		return one("response.content_part.added", map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID,
			"output_index": v.OutputIndex, "content_index": v.ContentIndex, "part": e.eventPart(v.Part)})
	case agent.ContentPartDone:
		return one("response.content_part.done", map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID,
			"output_index": v.OutputIndex, "content_index": v.ContentIndex, "part": e.eventPart(v.Part)})
	case agent.TextDelta:
		typ := e.name("response.output_text.delta", "response.text.delta")
		if v.Audio {
			typ = e.name("response.output_audio_transcript.delta", "response.audio_transcript.delta")
		}
		return one(typ, map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID, "output_index": v.OutputIndex,
			"content_index": v.ContentIndex, "delta": v.Delta})
	case agent.TextDone:
		f := map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID, "output_index": v.OutputIndex, "content_index": v.ContentIndex}
		if v.Audio {
			f["transcript"] = v.Text
			return one(e.name("response.output_audio_transcript.done", "response.audio_transcript.done"), f)
		}
		f["text"] = v.Text
		return one(e.name("response.output_text.done", "response.text.done"), f)
	case agent.AudioDone:
		return one(e.name("response.output_audio.done", "response.audio.done"), map[string]any{"response_id": v.ResponseID,
			"item_id": v.ItemID, "output_index": v.OutputIndex, "content_index": v.ContentIndex})
	case agent.ArgumentsDelta:
		return one("response.function_call_arguments.delta", map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID,
			"output_index": v.OutputIndex, "call_id": v.CallID, "delta": v.Delta})
	case agent.ArgumentsDone:
		return one("response.function_call_arguments.done", map[string]any{"response_id": v.ResponseID, "item_id": v.ItemID,
			"output_index": v.OutputIndex, "call_id": v.CallID, "name": v.Name, "arguments": v.Arguments})
	case agent.Error:
		return [][]byte{e.errorEvent("invalid_request_error", v.Code, v.Message, v.Param, v.EventID)}
	}
	return nil
}

// itemAdded renders an item joining the conversation: conversation.item
// .created (beta) or .added, and for complete client items .done too (GA).
func (e *encoder) itemAdded(it agent.Item, prev string, complete bool) [][]byte {
	f := func() map[string]any { return map[string]any{"item": e.item(it), "previous_item_id": nullable(prev)} }
	if e.beta {
		return [][]byte{e.marshal("conversation.item.created", f())}
	}
	out := [][]byte{e.marshal("conversation.item.added", f())}
	if complete {
		out = append(out, e.marshal("conversation.item.done", f()))
	}
	return out
}

// appendAudioDelta appends a response.output_audio.delta event carrying
// payload (already in the output encoding) to b, allocating nothing once b
// has grown.
func (e *encoder) appendAudioDelta(b []byte, p *agent.Playout, payload []byte) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, e.name("response.output_audio.delta", "response.audio.delta")...)
	b = append(b, `","event_id":"`...)
	b = e.appendID(b)
	b = append(b, `","response_id":"`...)
	b = append(b, p.ResponseID...)
	b = append(b, `","item_id":"`...)
	b = append(b, p.ItemID...)
	b = append(b, `","output_index":`...)
	b = strconv.AppendInt(b, int64(p.OutputIndex), 10)
	b = append(b, `,"content_index":`...)
	b = strconv.AppendInt(b, int64(p.ContentIndex), 10)
	b = append(b, `,"delta":"`...)
	b = base64.StdEncoding.AppendEncode(b, payload)
	return append(b, `"}`...)
}
