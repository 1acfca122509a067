package control

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// AgentConfig is everything about an agent that shapes a call. Each field
// X exists twice on an agent: X (deployed: what calls use) and draft_X
// (staged). It is also what the telephony and media sides receive with a
// call (Admission, OutboundCall). Nullable fields are pointers.
type AgentConfig struct {
	Prompt                    string   `json:"prompt"`
	Voice                     string   `json:"voice"`
	Product                   string   `json:"product"`
	PrimaryLanguage           string   `json:"primary_language"`
	AdditionalLanguages       []string `json:"additional_languages"`
	BackgroundTrack           *string  `json:"background_track"`
	ThinkingLevel             string   `json:"thinking_level"`
	AcknowledgementPromptMode string   `json:"acknowledgement_prompt_mode"`
	AcknowledgementPrompt     *string  `json:"acknowledgement_prompt"`
	InboundSpeakOrder         string   `json:"inbound_speak_order"`
	OutboundSpeakOrder        string   `json:"outbound_speak_order"`
	FirstMessage              *string  `json:"first_message"`
	SilenceIntervalSeconds    int      `json:"silence_interval_seconds"`
	SilenceMaxCheckins        int      `json:"silence_max_checkins"`
	MaxCallDurationSeconds    int      `json:"max_call_duration_seconds"`
	Tools                     []Tool   `json:"tools"`
	KnowledgeBaseIDs          []string `json:"knowledge_base_ids"`
	KnowledgeDocumentIDs      []string `json:"knowledge_document_ids"`
	KnowledgeBeforeReply      bool     `json:"knowledge_retrieve_before_reply"`
	MCPServerIDs              []string `json:"mcp_server_ids"`
	// MCPToolSearchThreshold: over this many MCP tools, the model is
	// offered tool_search instead of their definitions.
	MCPToolSearchThreshold int                   `json:"mcp_tool_search_threshold"`
	Placeholders           []string              `json:"placeholders"`
	Telephony              Telephony             `json:"telephony"`
	Voicemail              Voicemail             `json:"voicemail"`
	TransferDestinations   []TransferDestination `json:"transfer_destinations"`
	CallEvents             []string              `json:"call_events"`
	// GradingEnabled grades every finished call automatically
	// (control/grading); default true.
	GradingEnabled bool `json:"grading_enabled"`
}

// Tool is a function the agent may call: an OpenAI-style function
// definition whose parameters are a JSON Schema object.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Telephony tunes the audio path for phone lines.
type Telephony struct {
	// NoiseReduction is near_field, far_field or off.
	NoiseReduction   string `json:"noise_reduction"`
	EchoCancellation bool   `json:"echo_cancellation"`
	// EndpointingMS is the silence that ends a caller's turn.
	EndpointingMS int `json:"endpointing_ms"`
	// Interruptible lets caller speech cut the agent off (barge-in).
	Interruptible bool `json:"interruptible"`
}

// Voicemail says what the agent does when a machine answers an outbound
// call: hang up, leave Message, or carry on as if a person answered.
type Voicemail struct {
	Action  string `json:"action"`
	Message string `json:"message"`
}

// TransferDestination is a number the agent may transfer a call to.
type TransferDestination struct {
	Name        string `json:"name"`
	Number      string `json:"number"`
	Description string `json:"description"`
}

// defaultPrompt is the prompt of an agent created without one.
const defaultPrompt = "You are a helpful, concise voice assistant. Keep answers short and speak naturally."

// callEventTypes are the call-lifecycle webhook events an agent may emit.
var callEventTypes = []string{"telephony.incoming", "telephony.complete", "telephony.tool", "web.incoming", "web.complete", "web.tool"}

// defaultAgentConfig is the configuration of a new agent before the
// request's fields apply.
func (r *resources) defaultAgentConfig() AgentConfig {
	return AgentConfig{
		Prompt:                    defaultPrompt,
		Voice:                     r.cfg.DefaultVoice,
		Product:                   r.cfg.DefaultProduct,
		PrimaryLanguage:           "en-US",
		AdditionalLanguages:       []string{},
		ThinkingLevel:             "low",
		AcknowledgementPromptMode: "off",
		InboundSpeakOrder:         "agent_first",
		OutboundSpeakOrder:        "user_first",
		SilenceIntervalSeconds:    10,
		SilenceMaxCheckins:        2,
		MaxCallDurationSeconds:    1800,
		Tools:                     []Tool{},
		KnowledgeBaseIDs:          []string{},
		KnowledgeDocumentIDs:      []string{},
		MCPServerIDs:              []string{},
		MCPToolSearchThreshold:    40,
		Placeholders:              []string{},
		Telephony:                 Telephony{NoiseReduction: "far_field", EchoCancellation: true, EndpointingMS: 600, Interruptible: true},
		Voicemail:                 Voicemail{Action: "hangup"},
		TransferDestinations:      []TransferDestination{},
		CallEvents:                slices.Clone(callEventTypes),
		GradingEnabled:            true,
	}
}

// configField is one field of AgentConfig, found by its JSON name.
type configField struct {
	name  string
	index int
}

// configFields lists AgentConfig's fields in declaration order.
var configFields = func() []configField {
	t := reflect.TypeFor[AgentConfig]()
	out := make([]configField, t.NumField())
	for i := range out {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[i] = configField{name: name, index: i}
	}
	return out
}()

// configFieldNames are the JSON names of the config fields.
func configFieldNames() []string {
	out := make([]string, len(configFields))
	for i, f := range configFields {
		out[i] = f.name
	}
	return out
}

// setField decodes raw into field f of cfg. Objects merge into the
// current value (PATCH telephony {"endpointing_ms": 800} keeps the rest);
// null clears nullable fields and lists and is refused elsewhere.
func setField(cfg *AgentConfig, f configField, raw json.RawMessage) string {
	v := reflect.ValueOf(cfg).Elem().Field(f.index)
	if string(raw) == "null" {
		switch v.Kind() {
		case reflect.Pointer:
			v.SetZero()
			return ""
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return ""
		}
		return "This field may not be null."
	}
	nv := reflect.New(v.Type())
	if v.Kind() == reflect.Struct {
		nv.Elem().Set(v)
	}
	if err := json.Unmarshal(raw, nv.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if asTypeErr(err, &te) {
			return "Must be " + jsonKind(te.Type.Kind().String()) + "."
		}
		return "Must be " + jsonKind(v.Kind().String()) + "."
	}
	v.Set(nv.Elem())
	return ""
}

// diffConfig lists the fields whose values differ between a and b.
func diffConfig(a, b AgentConfig) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for _, f := range configFields {
		ja, _ := json.Marshal(va.Field(f.index).Interface())
		jb, _ := json.Marshal(vb.Field(f.index).Interface())
		if string(ja) != string(jb) {
			out = append(out, f.name)
		}
	}
	return out
}

// decodeConfig reads a stored configuration over the defaults, so rows
// written before a field existed get its default.
func (r *resources) decodeConfig(raw []byte) (AgentConfig, error) {
	c := r.defaultAgentConfig()
	if err := json.Unmarshal(raw, &c); err != nil {
		return AgentConfig{}, err
	}
	return c, nil
}
