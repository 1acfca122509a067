package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/voiced/voiced/media/agent"
)

// envelope is what every client event has.
type envelope struct {
	Type    string `json:"type"`
	EventID string `json:"event_id"`
}

// handleText handles one client JSON event.
func (c *conn) handleText(msg []byte) {
	if audio, ok := appendPayload(msg); ok {
		if !c.live {
			c.buffer(append([]byte(nil), msg...))
			return
		}
		c.feedAudio(audio, true, "")
		return
	}
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil || env.Type == "" {
		c.sendErr("invalid_json", "The event is not a JSON object with a type.", "", "")
		return
	}
	if env.Type == "session.update" {
		c.sessionUpdate(msg, env.EventID)
		return
	}
	if !c.live {
		if _, known := clientEvents[env.Type]; !known {
			c.unknown(env)
			return
		}
		c.buffer(append([]byte(nil), msg...))
		return
	}
	switch env.Type {
	case "input_audio_buffer.append":
		var e struct {
			Audio []byte `json:"audio"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			c.sendErr("invalid_value", "audio must be base64 audio in the session's input format.", "audio", env.EventID)
			return
		}
		c.feedAudio(e.Audio, false, env.EventID)
	case "input_audio_buffer.commit":
		c.flushInput()
		_ = c.sess.CommitInput(env.EventID)
	case "input_audio_buffer.clear":
		c.in.reset()
		_ = c.sess.ClearInput(env.EventID)
	case "conversation.item.create":
		c.itemCreate(msg, env.EventID)
	case "conversation.item.delete", "conversation.item.retrieve":
		var e struct {
			ItemID string `json:"item_id"`
		}
		_ = json.Unmarshal(msg, &e)
		if env.Type == "conversation.item.delete" {
			_ = c.sess.DeleteItem(env.EventID, e.ItemID)
		} else {
			_ = c.sess.RetrieveItem(env.EventID, e.ItemID)
		}
	case "conversation.item.truncate":
		var e struct {
			ItemID       string `json:"item_id"`
			ContentIndex int    `json:"content_index"`
			AudioEndMS   int64  `json:"audio_end_ms"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			c.sendErr("invalid_value", "truncate needs item_id, content_index and audio_end_ms.", "", env.EventID)
			return
		}
		_ = c.sess.TruncateItem(env.EventID, e.ItemID, e.ContentIndex, e.AudioEndMS)
	case "response.create":
		c.responseCreate(msg, env.EventID)
	case "response.cancel", "output_audio_buffer.clear":
		var e struct {
			ResponseID string `json:"response_id"`
		}
		_ = json.Unmarshal(msg, &e)
		_ = c.sess.CancelResponse(env.EventID, e.ResponseID)
		if env.Type == "output_audio_buffer.clear" {
			c.send(c.enc.marshal("output_audio_buffer.cleared", map[string]any{}))
		}
	default:
		c.unknown(env)
	}
}

// clientEvents are the client event types the server understands.
var clientEvents = map[string]struct{}{
	"session.update": {}, "input_audio_buffer.append": {}, "input_audio_buffer.commit": {}, "input_audio_buffer.clear": {},
	"conversation.item.create": {}, "conversation.item.delete": {}, "conversation.item.retrieve": {}, "conversation.item.truncate": {},
	"response.create": {}, "response.cancel": {}, "output_audio_buffer.clear": {},
}

func (c *conn) unknown(env envelope) {
	names := make([]string, 0, len(clientEvents))
	for n := range clientEvents {
		names = append(names, n)
	}
	sort.Strings(names)
	c.sendErr("invalid_value", fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", env.Type, strings.Join(names, ", ")), "type", env.EventID)
}

// sessionUpdate configures the session; the first one that configures
// anything starts an inline call.
func (c *conn) sessionUpdate(msg []byte, eventID string) {
	var e struct {
		Session json.RawMessage `json:"session"`
	}
	var u sessionUpdate
	if err := json.Unmarshal(msg, &e); err != nil || e.Session == nil || json.Unmarshal(e.Session, &u) != nil {
		c.sendErr("invalid_value", "session.update needs a session object.", "session", eventID)
		return
	}
	if !c.live && c.adm == nil {
		if !u.configures() {
			if u.Tracing != nil {
				c.set.tracing = u.Tracing
			}
			return
		}
		n, err := c.set.apply(&u, false)
		if err != nil {
			c.fieldErr(err, eventID)
			return
		}
		cfg, err := n.inlineConfig()
		if err != nil {
			c.sendErr("invalid_value", "config must be an object.", "session.config", eventID)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		adm, err := c.srv.deps.Calls.AdmitInline(ctx, c.org, cfg)
		cancel()
		var ce *ConfigError
		switch {
		case errors.As(err, &ce):
			keys := make([]string, 0, len(ce.Fields))
			for k := range ce.Fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			c.sendErr("invalid_config", ce.Error(), "session.config."+keys[0], eventID)
			return
		case errors.Is(err, ErrInsufficientBalance):
			c.sendErr("insufficient_balance", "The organization's balance is too low to start a call.", "", eventID)
			c.setEnd("error", "insufficient balance")
			c.requestClose(causeBalance)
			return
		case err != nil:
			c.log.Error("inline admission failed", "err", err)
			c.send(c.enc.errorEvent("server_error", "admission_failed", "The call could not be started; try again.", "", eventID))
			return
		}
		c.set = n
		c.beta = c.beta || u.beta()
		if err := c.start(adm, eventID); err != nil {
			c.log.Error("session start failed", "err", err)
			c.setEnd("error", "start: "+err.Error())
			c.requestClose(causeStartFailed)
		}
		return
	}
	n, err := c.set.apply(&u, c.live)
	if err != nil {
		c.fieldErr(err, eventID)
		return
	}
	if c.live && !turnEqual(n.turn, c.set.turn) {
		td, _ := n.turn.detection()
		if err := c.sess.SetTurnDetection(td); err != nil {
			c.sendErr("invalid_value", err.Error(), "session.audio.input.turn_detection", eventID)
			return
		}
	}
	c.set = n
	c.binaryOutput.Store(n.binaryOutput)
	c.enc.transcription.Store(n.transcribes())
	ev := map[string]any{"session": c.set.sessionObject(c.id, c.beta, c.callID())}
	if eventID != "" {
		ev["client_event_id"] = eventID
	}
	c.send(c.enc.marshal("session.updated", ev))
}

func (c *conn) callID() int64 {
	if c.adm == nil {
		return 0
	}
	return c.adm.CallID
}

func turnEqual(a, b *turnSettings) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func (c *conn) fieldErr(err error, eventID string) {
	var fe *fieldError
	if errors.As(err, &fe) {
		c.sendErr(fe.code, fe.msg, fe.param, eventID)
		return
	}
	c.sendErr("invalid_value", err.Error(), "session", eventID)
}

// itemIn is a client item.
type itemIn struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Status  string `json:"status"`
	Content []struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		Transcript string `json:"transcript"`
	} `json:"content"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Output    string `json:"output"`
}

func (c *conn) itemCreate(msg []byte, eventID string) {
	var e struct {
		PreviousItemID *string `json:"previous_item_id"`
		Item           itemIn  `json:"item"`
	}
	if err := json.Unmarshal(msg, &e); err != nil {
		c.sendErr("invalid_value", "conversation.item.create needs an item object.", "item", eventID)
		return
	}
	in := e.Item
	it := agent.Item{ID: in.ID, Type: in.Type, Role: in.Role, Status: in.Status, CallID: in.CallID, Name: in.Name,
		Arguments: in.Arguments, Output: in.Output}
	if it.Type == "" {
		it.Type = agent.ItemMessage
	}
	for i, p := range in.Content {
		switch p.Type {
		case "input_text":
			it.Content = append(it.Content, agent.Content{Type: agent.InputText, Text: p.Text})
		case "text", "output_text":
			it.Content = append(it.Content, agent.Content{Type: agent.OutputText, Text: p.Text})
		case "input_audio", "audio", "output_audio":
			if p.Transcript == "" {
				c.sendErr("invalid_value", "Audio content in created items needs a transcript; send audio with input_audio_buffer.append.",
					fmt.Sprintf("item.content[%d]", i), eventID)
				return
			}
			t := agent.InputAudio
			if p.Type != "input_audio" {
				t = agent.OutputAudio
			}
			it.Content = append(it.Content, agent.Content{Type: t, Transcript: p.Transcript, Transcribed: true})
		default:
			c.sendErr("invalid_value", fmt.Sprintf("Content type %q is not supported.", p.Type), fmt.Sprintf("item.content[%d].type", i), eventID)
			return
		}
	}
	prev := ""
	if e.PreviousItemID != nil {
		prev = *e.PreviousItemID
	}
	_ = c.sess.CreateItem(eventID, it, prev)
}

func (c *conn) responseCreate(msg []byte, eventID string) {
	var e struct {
		Response *struct {
			OutputModalities []string          `json:"output_modalities"`
			Modalities       []string          `json:"modalities"`
			Instructions     string            `json:"instructions"`
			Conversation     string            `json:"conversation"`
			Metadata         map[string]string `json:"metadata"`
			MaxOutputTokens  json.RawMessage   `json:"max_output_tokens"`
		} `json:"response"`
	}
	if err := json.Unmarshal(msg, &e); err != nil {
		c.sendErr("invalid_value", "response must be an object.", "response", eventID)
		return
	}
	o := agent.ResponseOptions{TextOnly: c.set.textOnly}
	if r := e.Response; r != nil {
		mods := r.OutputModalities
		if mods == nil {
			mods = r.Modalities
		}
		if mods != nil {
			o.TextOnly = true
			for _, m := range mods {
				if m == "audio" {
					o.TextOnly = false
				}
			}
		}
		o.Instructions, o.Metadata, o.OutOfBand = r.Instructions, r.Metadata, r.Conversation == "none"
		_ = json.Unmarshal(r.MaxOutputTokens, &o.MaxOutputTokens)
	}
	_ = c.sess.CreateResponse(eventID, o)
}
