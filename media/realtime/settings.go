package realtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/turn"
)

// codec is an audio encoding on the socket.
type codec uint8

const (
	codecPCM codec = iota
	codecULaw
	codecALaw
)

// format is a socket audio format: a codec and its rate.
type format struct {
	codec codec
	rate  int
}

// gaName and betaName are the format's names in the two dialects.
func (f format) gaName() string {
	switch f.codec {
	case codecULaw:
		return "audio/pcmu"
	case codecALaw:
		return "audio/pcma"
	}
	return "audio/pcm"
}

func (f format) betaName() string {
	switch f.codec {
	case codecULaw:
		return "g711_ulaw"
	case codecALaw:
		return "g711_alaw"
	}
	return "pcm16"
}

// bytesPerSample is 2 for PCM, 1 for G.711.
func (f format) bytesPerSample() int {
	if f.codec == codecPCM {
		return 2
	}
	return 1
}

// parseFormatName reads a format name. The GA audio/pcm defaults to 16
// kHz (spec 4.14); the beta pcm16 is OpenAI's 24 kHz PCM; G.711 is 8 kHz.
func parseFormatName(name string) (format, bool) {
	switch name {
	case "audio/pcm":
		return format{codecPCM, media.Rate16k}, true
	case "pcm16":
		return format{codecPCM, media.Rate24k}, true
	case "audio/pcmu", "g711_ulaw":
		return format{codecULaw, media.Rate8k}, true
	case "audio/pcma", "g711_alaw":
		return format{codecALaw, media.Rate8k}, true
	}
	return format{}, false
}

// parseFormat reads a format given as a name or as {type, rate}.
func parseFormat(raw json.RawMessage) (format, error) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		f, ok := parseFormatName(name)
		if !ok {
			return format{}, fmt.Errorf("unsupported audio format %q: use audio/pcm, audio/pcmu, audio/pcma (or pcm16, g711_ulaw, g711_alaw)", name)
		}
		return f, nil
	}
	var o struct {
		Type string `json:"type"`
		Rate int    `json:"rate"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return format{}, fmt.Errorf("audio format must be a string or an object with type and rate")
	}
	f, ok := parseFormatName(o.Type)
	if !ok {
		return format{}, fmt.Errorf("unsupported audio format type %q: use audio/pcm, audio/pcmu or audio/pcma", o.Type)
	}
	if o.Rate != 0 {
		if err := f.setRate(o.Rate); err != nil {
			return format{}, err
		}
	}
	return f, nil
}

// setRate sets a PCM rate (16000 or 24000); G.711 accepts only 8000.
func (f *format) setRate(rate int) error {
	if f.codec != codecPCM {
		if rate != media.Rate8k {
			return fmt.Errorf("G.711 audio is always 8000 Hz, not %d", rate)
		}
		return nil
	}
	if rate != media.Rate16k && rate != media.Rate24k {
		return fmt.Errorf("PCM rate %d is not supported: use 16000 or 24000", rate)
	}
	f.rate = rate
	return nil
}

// turnSettings is turn_detection.
type turnSettings struct {
	Type              string  `json:"type"`
	Threshold         float64 `json:"threshold,omitempty"`
	PrefixPaddingMS   int     `json:"prefix_padding_ms,omitempty"`
	SilenceDurationMS int     `json:"silence_duration_ms,omitempty"`
	IdleTimeoutMS     *int    `json:"idle_timeout_ms"`
	CreateResponse    *bool   `json:"create_response"`
	InterruptResponse *bool   `json:"interrupt_response"`
	Eagerness         string  `json:"eagerness,omitempty"`
}

func defaultTurn() *turnSettings {
	t, f := true, true
	return &turnSettings{Type: "server_vad", Threshold: turn.DefaultThreshold, PrefixPaddingMS: 300, SilenceDurationMS: 500,
		CreateResponse: &t, InterruptResponse: &f}
}

// detection converts to the engine's turn detection.
func (t *turnSettings) detection() (*agent.TurnDetection, error) {
	if t == nil {
		return nil, nil
	}
	c := turn.Config{Threshold: float32(t.Threshold),
		PrefixPadding:   time.Duration(t.PrefixPaddingMS) * time.Millisecond,
		SilenceDuration: time.Duration(t.SilenceDurationMS) * time.Millisecond}
	if t.PrefixPaddingMS == 0 {
		c.PrefixPadding = -1
	}
	if t.IdleTimeoutMS != nil {
		c.IdleTimeout = time.Duration(*t.IdleTimeoutMS) * time.Millisecond
	}
	switch t.Type {
	case "server_vad":
	case "semantic_vad":
		c = turn.Config{Mode: turn.SemanticVAD, IdleTimeout: c.IdleTimeout}
		e, err := turn.ParseEagerness(t.Eagerness)
		if err != nil {
			return nil, fmt.Errorf("turn_detection.eagerness must be low, medium, high or auto")
		}
		c.Eagerness = e
	default:
		return nil, fmt.Errorf("turn_detection.type must be server_vad or semantic_vad")
	}
	if _, err := turn.New(c); err != nil {
		return nil, fmt.Errorf("turn_detection: %v", err)
	}
	td := &agent.TurnDetection{Turn: c, CreateResponse: true, InterruptResponse: true}
	if t.CreateResponse != nil {
		td.CreateResponse = *t.CreateResponse
	}
	if t.InterruptResponse != nil {
		td.InterruptResponse = *t.InterruptResponse
	}
	return td, nil
}

// settings is a socket's effective session configuration.
type settings struct {
	instructions   string
	voice          string
	in, out        format
	noiseReduction string // near_field, far_field or ""
	turn           *turnSettings
	tools          []Tool
	toolsJSON      json.RawMessage
	textOnly       bool
	binaryOutput   bool
	// playoutEvents: the client asked (?voiced_events=playout) for the
	// agent's pauses and resumes (voiced.output_audio.paused, .resumed).
	playoutEvents bool
	config        json.RawMessage
	model         string
	transcription json.RawMessage
	tracing       json.RawMessage
	toolChoice    json.RawMessage
	temperature   *float64
	maxTokens     int
}

func defaultSettings() settings {
	return settings{in: format{codecPCM, media.Rate16k}, out: format{codecPCM, media.Rate16k}, turn: defaultTurn(),
		toolsJSON: json.RawMessage("[]"), toolChoice: json.RawMessage(`"auto"`)}
}

// sessionUpdate is the session object of a session.update: GA (nested
// audio) and beta (flat) fields both. Unknown fields are ignored.
type sessionUpdate struct {
	Type                     *string         `json:"type"`
	Model                    *string         `json:"model"`
	Instructions             *string         `json:"instructions"`
	Voice                    *string         `json:"voice"`
	InputAudioFormat         json.RawMessage `json:"input_audio_format"`
	OutputAudioFormat        json.RawMessage `json:"output_audio_format"`
	Modalities               []string        `json:"modalities"`
	OutputModalities         []string        `json:"output_modalities"`
	TurnDetection            json.RawMessage `json:"turn_detection"`
	InputAudioNoiseReduction json.RawMessage `json:"input_audio_noise_reduction"`
	InputAudioTranscription  json.RawMessage `json:"input_audio_transcription"`
	Audio                    *struct {
		Input *struct {
			Format         json.RawMessage `json:"format"`
			NoiseReduction json.RawMessage `json:"noise_reduction"`
			Transcription  json.RawMessage `json:"transcription"`
			TurnDetection  json.RawMessage `json:"turn_detection"`
		} `json:"input"`
		Output *struct {
			Format json.RawMessage `json:"format"`
			Voice  *string         `json:"voice"`
		} `json:"output"`
	} `json:"audio"`
	Tools                   json.RawMessage `json:"tools"`
	ToolChoice              json.RawMessage `json:"tool_choice"`
	Temperature             *float64        `json:"temperature"`
	MaxOutputTokens         json.RawMessage `json:"max_output_tokens"`
	MaxResponseOutputTokens json.RawMessage `json:"max_response_output_tokens"`
	BinaryOutput            *bool           `json:"binary_output"`
	Config                  json.RawMessage `json:"config"`
	Tracing                 json.RawMessage `json:"tracing"`
}

// configures says whether the update sets anything but bookkeeping
// (type, model, tracing): an update of tracing alone does not start a
// call (the agents SDK sends one when the session is created).
func (u *sessionUpdate) configures() bool {
	return u.Instructions != nil || u.Voice != nil || u.InputAudioFormat != nil || u.OutputAudioFormat != nil ||
		u.Modalities != nil || u.OutputModalities != nil || u.TurnDetection != nil || u.InputAudioNoiseReduction != nil ||
		u.InputAudioTranscription != nil || u.Audio != nil || u.Tools != nil || u.ToolChoice != nil || u.Temperature != nil ||
		u.MaxOutputTokens != nil || u.MaxResponseOutputTokens != nil || u.BinaryOutput != nil || u.Config != nil ||
		(u.Tracing == nil && u.Model == nil)
}

// beta says whether the update is written in the beta dialect.
func (u *sessionUpdate) beta() bool {
	if u.Audio != nil || u.OutputModalities != nil {
		return false
	}
	return u.Modalities != nil || u.InputAudioFormat != nil || u.OutputAudioFormat != nil || u.InputAudioTranscription != nil
}

// fieldError is a session.update refusal: the param (JSON path) and why.
type fieldError struct {
	code, param, msg string
}

func (e *fieldError) Error() string { return e.param + ": " + e.msg }

func invalid(param, msg string) *fieldError {
	return &fieldError{code: "invalid_value", param: param, msg: msg}
}

// transcribes says whether input_audio_transcription is set (not absent
// or null).
func (s settings) transcribes() bool {
	return len(bytes.TrimSpace(s.transcription)) > 0 && !isNull(s.transcription)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// apply returns s with the update applied. When live, a change to what is
// fixed at the start (formats, instructions, voice, noise reduction,
// tools, config) is refused with session_config_immutable; the rest may
// change.
func (s settings) apply(u *sessionUpdate, live bool) (settings, error) {
	n := s
	if u.Model != nil {
		n.model = *u.Model
	}
	if u.Instructions != nil {
		n.instructions = *u.Instructions
	}
	if u.Voice != nil {
		n.voice = *u.Voice
	}
	var inFmt, outFmt, nr, tr, td json.RawMessage = u.InputAudioFormat, u.OutputAudioFormat, u.InputAudioNoiseReduction, u.InputAudioTranscription, u.TurnDetection
	if a := u.Audio; a != nil {
		if a.Input != nil {
			inFmt = firstRaw(a.Input.Format, inFmt)
			nr = firstRaw(a.Input.NoiseReduction, nr)
			tr = firstRaw(a.Input.Transcription, tr)
			td = firstRaw(a.Input.TurnDetection, td)
		}
		if a.Output != nil {
			outFmt = firstRaw(a.Output.Format, outFmt)
			if a.Output.Voice != nil {
				n.voice = *a.Output.Voice
			}
		}
	}
	if inFmt != nil {
		f, err := parseFormat(inFmt)
		if err != nil {
			return s, invalid("session.audio.input.format", err.Error())
		}
		n.in = f
	}
	if outFmt != nil {
		f, err := parseFormat(outFmt)
		if err != nil {
			return s, invalid("session.audio.output.format", err.Error())
		}
		n.out = f
	}
	if nr != nil {
		n.noiseReduction = ""
		if !isNull(nr) {
			var o struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(nr, &o) != nil || (o.Type != "near_field" && o.Type != "far_field") {
				return s, invalid("session.audio.input.noise_reduction", "noise_reduction must be null or {\"type\": \"near_field\" | \"far_field\"}")
			}
			n.noiseReduction = o.Type
		}
	}
	if tr != nil {
		n.transcription = tr
	}
	if td != nil {
		if isNull(td) {
			n.turn = nil
		} else {
			t := defaultTurn()
			if err := json.Unmarshal(td, t); err != nil {
				return s, invalid("session.audio.input.turn_detection", "turn_detection must be null or an object")
			}
			if t.Type == "" {
				t.Type = "server_vad"
			}
			if t.Type == "semantic_vad" {
				t.Threshold, t.PrefixPaddingMS, t.SilenceDurationMS = 0, 0, 0
			}
			if _, err := t.detection(); err != nil {
				return s, invalid("session.audio.input.turn_detection", err.Error())
			}
			n.turn = t
		}
	}
	mods := u.OutputModalities
	if mods == nil {
		mods = u.Modalities
	}
	if mods != nil {
		n.textOnly = !slices.Contains(mods, "audio")
	}
	if u.Tools != nil {
		tools, err := parseTools(u.Tools)
		if err != nil {
			return s, invalid("session.tools", err.Error())
		}
		n.tools, n.toolsJSON = tools, u.Tools
	}
	if u.ToolChoice != nil {
		n.toolChoice = u.ToolChoice
	}
	if u.Temperature != nil {
		n.temperature = u.Temperature
	}
	if raw := firstRaw(u.MaxOutputTokens, u.MaxResponseOutputTokens); raw != nil {
		var k int
		if json.Unmarshal(raw, &k) == nil && k > 0 {
			n.maxTokens = k
		} else {
			n.maxTokens = 0
		}
	}
	if u.BinaryOutput != nil {
		n.binaryOutput = *u.BinaryOutput
	}
	if u.Tracing != nil {
		n.tracing = u.Tracing
	}
	if u.Config != nil && !isNull(u.Config) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(u.Config, &obj) != nil {
			return s, invalid("session.config", "config must be an object")
		}
		if _, ok := obj["prompt"]; ok {
			return s, invalid("session.config.prompt", "Set the prompt with session.instructions.")
		}
		n.config = u.Config
	}
	if live {
		for _, c := range []struct {
			changed bool
			param   string
		}{
			{n.instructions != s.instructions, "session.instructions"},
			{n.voice != s.voice, "session.audio.output.voice"},
			{n.in != s.in, "session.audio.input.format"},
			{n.out != s.out, "session.audio.output.format"},
			{n.noiseReduction != s.noiseReduction, "session.audio.input.noise_reduction"},
			{!jsonEqual(n.toolsJSON, s.toolsJSON), "session.tools"},
			{!jsonEqual(n.config, s.config), "session.config"},
		} {
			if c.changed {
				return s, &fieldError{code: "session_config_immutable", param: c.param,
					msg: "The session's formats and agent configuration cannot change after the call started; only turn_detection, binary_output and tracing can."}
			}
		}
	}
	return n, nil
}

func firstRaw(a, b json.RawMessage) json.RawMessage {
	if a != nil {
		return a
	}
	return b
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// parseTools reads function tools ({type: "function", name, description,
// parameters}); other tool types are refused.
func parseTools(raw json.RawMessage) ([]Tool, error) {
	if isNull(raw) {
		return nil, nil
	}
	var in []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("tools must be an array of function definitions")
	}
	out := make([]Tool, 0, len(in))
	for i, t := range in {
		if t.Type != "" && t.Type != "function" {
			return nil, fmt.Errorf("tools[%d]: only function tools are supported, not %q", i, t.Type)
		}
		if t.Name == "" {
			return nil, fmt.Errorf("tools[%d]: name is required", i)
		}
		out = append(out, Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return out, nil
}

// inlineConfig is the inline configuration sent for admission: the
// spec's config object with the prompt, and the voice and tools set
// through the session's own fields when config does not set them.
func (s *settings) inlineConfig() (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if s.config != nil {
		if err := json.Unmarshal(s.config, &obj); err != nil {
			return nil, err
		}
	}
	prompt := s.instructions
	if prompt == "" {
		prompt = agent.DefaultInstructions
	}
	obj["prompt"], _ = json.Marshal(prompt)
	if _, ok := obj["voice"]; !ok && s.voice != "" {
		obj["voice"], _ = json.Marshal(s.voice)
	}
	if _, ok := obj["tools"]; !ok && len(s.tools) > 0 {
		type tool struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
		}
		ts := make([]tool, len(s.tools))
		for i, t := range s.tools {
			ts[i] = tool{"function", t.Name, t.Description, t.Parameters}
		}
		obj["tools"], _ = json.Marshal(ts)
	}
	return json.Marshal(obj)
}

// sessionObject renders the session for session.created and
// session.updated in the socket's dialect.
func (s *settings) sessionObject(id string, beta bool, callID int64) map[string]any {
	var td any
	if s.turn != nil {
		td = s.turn
	}
	var nr any
	if s.noiseReduction != "" {
		nr = map[string]string{"type": s.noiseReduction}
	}
	mods := []string{"audio"}
	if s.textOnly {
		mods = []string{"text"}
	}
	maxTok := any("inf")
	if s.maxTokens > 0 {
		maxTok = s.maxTokens
	}
	tools := s.toolsJSON
	if tools == nil {
		tools = json.RawMessage("[]")
	}
	o := map[string]any{"object": "realtime.session", "id": id, "model": s.model, "instructions": s.instructions,
		"tools": tools, "tool_choice": s.toolChoice, "binary_output": s.binaryOutput}
	if callID != 0 {
		o["call_id"] = strconv.FormatInt(callID, 10)
	}
	if s.config != nil {
		o["config"] = s.config
	}
	if beta {
		if !s.textOnly {
			mods = []string{"audio", "text"}
		}
		o["modalities"] = mods
		o["voice"] = s.voice
		o["input_audio_format"] = s.in.betaName()
		o["output_audio_format"] = s.out.betaName()
		o["turn_detection"] = td
		o["input_audio_noise_reduction"] = nr
		o["input_audio_transcription"] = rawOrNil(s.transcription)
		o["max_response_output_tokens"] = maxTok
		if s.temperature != nil {
			o["temperature"] = *s.temperature
		}
		return o
	}
	o["type"] = "realtime"
	o["output_modalities"] = mods
	o["max_output_tokens"] = maxTok
	o["tracing"] = rawOrNil(s.tracing)
	o["audio"] = map[string]any{
		"input": map[string]any{"format": map[string]any{"type": s.in.gaName(), "rate": s.in.rate},
			"noise_reduction": nr, "transcription": rawOrNil(s.transcription), "turn_detection": td},
		"output": map[string]any{"format": map[string]any{"type": s.out.gaName(), "rate": s.out.rate}, "voice": s.voice, "speed": 1},
	}
	return o
}

func rawOrNil(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return r
}
