package control

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calllog"
)

var _ calllog.Schema[AgentConfig] = agentSchema{}

// Inline validates an inline configuration (calllog.Schema).
func (a agentSchema) Inline(raw json.RawMessage, prefix string) (AgentConfig, api.Fields) {
	cfg, f := a.r.inlineConfig(raw, prefix)
	return cfg, api.Fields(f)
}

// Snapshot is what a call record keeps of c (calllog.Schema).
func (agentSchema) Snapshot(c AgentConfig) calllog.Snapshot {
	s := calllog.Snapshot{Prompt: c.Prompt, Product: c.Product, Voice: c.Voice}
	if tools, err := json.Marshal(nonNil(c.Tools)); err == nil {
		s.Tools = tools
	}
	return s
}

// inlineKeys are the keys an inline configuration accepts (spec 4.14).
var inlineKeys = []string{"prompt", "voice", "product", "tools", "primary_language", "additional_languages",
	"background_track", "telephony", "placeholders", "outbound", "call_events"}

// inlineConfig validates an inline configuration over the agent defaults.
// Messages are keyed prefix+field. telephony may also be a boolean: false
// is near-field tuning without echo cancellation, true the defaults.
func (r *resources) inlineConfig(raw json.RawMessage, prefix string) (AgentConfig, fields) {
	f := fields{}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		f.add(strings.TrimSuffix(prefix, "."), "Must be an object.")
		return AgentConfig{}, f
	}
	cfg := r.defaultAgentConfig()
	if p, ok := obj["prompt"]; !ok || string(p) == "null" {
		f.add(prefix+"prompt", "This field is required.")
	}
	for k, v := range obj {
		switch {
		case !slices.Contains(inlineKeys, k):
			f.add(prefix+k, "Unknown field; an inline config accepts only "+strings.Join(inlineKeys, ", ")+".")
		case k == "outbound":
			if string(v) != "null" && (len(v) == 0 || v[0] != '{') {
				f.add(prefix+k, "Must be an object.")
			}
		case k == "telephony" && (string(v) == "false" || string(v) == "true"):
			if string(v) == "false" {
				cfg.Telephony.NoiseReduction, cfg.Telephony.EchoCancellation = "near_field", false
			}
		default:
			for _, cf := range configFields {
				if cf.name == k {
					if msg := setField(&cfg, cf, v); msg != "" {
						f.add(prefix+k, msg)
					}
				}
			}
		}
	}
	if len(f) > 0 {
		return cfg, f
	}
	if strings.TrimSpace(cfg.Prompt) == "" {
		f.add(prefix+"prompt", "This field may not be blank.")
	}
	vf := fields{}
	r.validateConfig(&cfg, vf, "")
	for k, msgs := range vf {
		f[prefix+k] = append(f[prefix+k], msgs...)
	}
	// Inline sessions add no automatic behaviours (spec 4.14).
	cfg.InboundSpeakOrder, cfg.OutboundSpeakOrder, cfg.FirstMessage = "user_first", "user_first", nil
	cfg.SilenceIntervalSeconds, cfg.SilenceMaxCheckins = 0, 0
	return cfg, f
}

// Override puts the widget webhook's per-call answers into cfg
// (browser.Overrider): prompt, first message and voice replace the
// agent's, and variables fill {{name}} placeholders of the prompt and
// first message.
func (agentSchema) Override(cfg *AgentConfig, prompt, first, voice string, vars map[string]string) {
	if prompt != "" {
		cfg.Prompt = prompt
	}
	if first != "" {
		cfg.FirstMessage = &first
	}
	if voice != "" {
		cfg.Voice = voice
	}
	if len(vars) == 0 {
		return
	}
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v, "{{ "+k+" }}", v)
	}
	r := strings.NewReplacer(pairs...)
	cfg.Prompt = r.Replace(cfg.Prompt)
	if cfg.FirstMessage != nil {
		fm := r.Replace(*cfg.FirstMessage)
		cfg.FirstMessage = &fm
	}
}
