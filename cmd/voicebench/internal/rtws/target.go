// Package rtws is voicebench's realtime WebSocket client: one connection
// per call speaking the OpenAI Realtime event protocol that voiced serves
// at /v1/realtime. It is a load.Target whose sessions carry their own
// media (load.MediaSession): the generator's pacer hands each session one
// 20 ms frame per tick, a writer goroutine per session sends it as
// input_audio_buffer.append, and a reader goroutine takes the agent's
// audio from response.output_audio.delta (or the beta
// response.audio.delta, or binary frames) and measures it.
//
// # Measuring a stream over TCP
//
// Nothing is lost over TCP, so loss is always zero. The agent's deltas
// carry one 20 ms frame each (voiced's pacer); their interarrival jitter is
// computed as for RTP with the audio position as timestamp, advanced by
// the wall clock across the silences between answers, as an RTP sender
// with silence suppression does. Delay is recovered from speech onsets
// as for RTP (package audio).
package rtws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
)

// Format is an audio format of the realtime protocol.
type Format struct {
	Name string // pcm16, g711_ulaw, g711_alaw
	Rate int
}

// ParseFormat reads a format name and the PCM rate.
func ParseFormat(name string, pcmRate int) (Format, error) {
	switch name {
	case "pcm16":
		if pcmRate != 16000 && pcmRate != 24000 {
			return Format{}, fmt.Errorf("%w: PCM rate %d (16000 or 24000)", ErrConfig, pcmRate)
		}
		return Format{Name: name, Rate: pcmRate}, nil
	case "g711_ulaw", "g711_alaw":
		return Format{Name: name, Rate: 8000}, nil
	}
	return Format{}, fmt.Errorf("%w: format %q (pcm16, g711_ulaw, g711_alaw)", ErrConfig, name)
}

// gaType is the GA name of the format.
func (f Format) gaType() string {
	switch f.Name {
	case "g711_ulaw":
		return "audio/pcmu"
	case "g711_alaw":
		return "audio/pcma"
	}
	return "audio/pcm"
}

// Config says where to connect and what to send.
type Config struct {
	// URL is the socket, e.g. ws://127.0.0.1:8080/v1/realtime; with an
	// agent_id query parameter the saved agent's call starts at once and
	// the formats go in the query; without one the call is inline and
	// starts with our session.update.
	URL    string
	APIKey string
	Format Format
	Source *audio.Source
}

// Target dials realtime sessions.
type Target struct {
	cfg      Config
	url      string
	inline   bool
	msgs     [][]byte // one prebuilt append event per cycle frame
	update   []byte
	onsetAt  int
	onsetOff time.Duration
}

// NewTarget prepares the events every session sends.
func NewTarget(cfg Config) (*Target, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, fmt.Errorf("%w: url %q", ErrConfig, cfg.URL)
	}
	if cfg.Source == nil || cfg.Format.Rate == 0 {
		return nil, fmt.Errorf("%w: source and format are required", ErrConfig)
	}
	t := &Target{cfg: cfg}
	q := u.Query()
	t.inline = q.Get("agent_id") == ""
	if !t.inline {
		name := cfg.Format.Name
		q.Set("input_audio_format", name)
		q.Set("output_audio_format", name)
		if name == "pcm16" {
			q.Set("input_rate", strconv.Itoa(cfg.Format.Rate))
			q.Set("output_rate", strconv.Itoa(cfg.Format.Rate))
		}
		u.RawQuery = q.Encode()
	}
	t.url = u.String()

	rate := cfg.Format.Rate
	src := cfg.Source.PCM(rate)
	n := rate / 50
	raw := make([]byte, 2*n)
	for i := range cfg.Source.CycleFrames() {
		frame := src[i*n : (i+1)*n]
		var b []byte
		switch cfg.Format.Name {
		case "g711_ulaw":
			b = make([]byte, n)
			g711.EncodeULawTo(b, frame)
		case "g711_alaw":
			b = make([]byte, n)
			g711.EncodeALawTo(b, frame)
		default:
			pcm.Int16ToBytesTo(raw, frame)
			b = raw
		}
		msg, _ := json.Marshal(map[string]string{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(b)})
		t.msgs = append(t.msgs, msg)
	}
	format := map[string]any{"type": cfg.Format.gaType()}
	if cfg.Format.Name == "pcm16" {
		format["rate"] = rate
	}
	t.update, _ = json.Marshal(map[string]any{"type": "session.update", "session": map[string]any{
		"type":  "realtime",
		"audio": map[string]any{"input": map[string]any{"format": format, "turn_detection": map[string]any{"type": "server_vad"}}, "output": map[string]any{"format": format}},
	}})
	f, k := cfg.Source.Onset(rate)
	t.onsetAt, t.onsetOff = f, time.Duration(k)*time.Second/time.Duration(rate)
	return t, nil
}

// Inline reports whether sessions configure themselves (no agent_id).
func (t *Target) Inline() bool { return t.inline }

// Dial implements load.Target: connect, wait for session.created, and
// for inline sessions send session.update and wait for session.updated.
func (t *Target) Dial(ctx context.Context, o load.Offer) (load.Session, load.Answer, error) {
	h := http.Header{}
	if t.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+t.cfg.APIKey)
	}
	s, err := dial(ctx, t, h)
	if err != nil {
		return nil, load.Answer{}, err
	}
	if err := s.await(ctx, "session.created", nil); err != nil {
		s.Hangup(context.Background())
		return nil, load.Answer{}, err
	}
	if t.inline {
		if err := s.await(ctx, "session.updated", t.update); err != nil {
			s.Hangup(context.Background())
			return nil, load.Answer{}, err
		}
	}
	s.start()
	return s, load.Answer{Codec: o.Codec}, nil
}

// event is the part of a server event voicebench reads.
type event struct {
	Type  string `json:"type"`
	Delta string `json:"delta"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (e *event) audio() bool {
	return e.Type == "response.output_audio.delta" || e.Type == "response.audio.delta"
}

func (e *event) refusal() error {
	msg := "error event"
	if e.Error != nil {
		msg = strings.TrimSpace(e.Error.Code + " " + e.Error.Message)
	}
	return fmt.Errorf("%w: %s", ErrRefused, msg)
}
