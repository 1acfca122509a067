package scenarios

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voiced/voiced/control/api"
)

// Limits of a scenario's fields (spec 2.12, 8).
const (
	MaxTitle       = 200
	MaxPrompt      = 4000
	MaxLabels      = 10
	MaxLabel       = 50
	MaxSilence     = 15
	MaxDTMF        = 12
	MaxTopicChange = 500
)

// The enumerations of the nested objects.
var (
	NoiseAssets  = []string{"none", "cafe", "street", "car", "office"}
	SNRs         = []int{0, 5, 10, 20}
	Paces        = []string{"natural", "slow", "fast"}
	Disfluencies = []string{"none", "light"}
	Accents      = []string{"default", "en-US", "en-GB", "en-IN", "es-MX", "en-AU", "fr-CA"}
	Directions   = []string{"inbound", "outbound"}
)

// AudioConditions is the noise mixed into the caller's audio; SNRdB is
// nil when NoiseAsset is none.
type AudioConditions struct {
	NoiseAsset string `json:"noise_asset"`
	SNRdB      *int   `json:"snr_db"`
}

// SpeechStyle is how the simulated caller speaks.
type SpeechStyle struct {
	Pace         string `json:"pace"`
	Disfluencies string `json:"disfluencies"`
	Accent       string `json:"accent"`
}

// CallerBehavior is what the simulated caller does besides talking.
type CallerBehavior struct {
	LongSilenceSeconds int    `json:"long_silence_seconds"`
	DTMFSequence       string `json:"dtmf_sequence"`
	TopicChange        string `json:"topic_change"`
}

// Telephony holds the telephony-only behaviour.
type Telephony struct {
	VoicemailAnswer bool `json:"voicemail_answer"`
}

// Settings are a scenario's editable fields, with the spec's defaults
// filled in by Defaults.
type Settings struct {
	Title           string          `json:"title"`
	ScenarioPrompt  string          `json:"scenario_prompt"`
	Labels          []string        `json:"labels"`
	AudioConditions AudioConditions `json:"audio_conditions"`
	SpeechStyle     SpeechStyle     `json:"speech_style"`
	CallerBehavior  CallerBehavior  `json:"caller_behavior"`
	Telephony       Telephony       `json:"telephony"`
	Direction       string          `json:"direction"`
}

// Defaults are the settings of a scenario that sets nothing but its title
// and prompt: noise none, pace natural, disfluencies none, accent
// default, silence 0, empty dtmf and topic change, no voicemail, inbound
// (the simulated caller rings the agent).
func Defaults() Settings {
	return Settings{Labels: []string{}, AudioConditions: AudioConditions{NoiseAsset: "none"},
		SpeechStyle: SpeechStyle{Pace: "natural", Disfluencies: "none", Accent: "default"}, Direction: "inbound"}
}

// The top-level fields a scenario request may set, and the read-only ones
// it may not.
var (
	writable = []string{"title", "scenario_prompt", "labels", "audio_conditions", "speech_style", "caller_behavior", "telephony", "direction"}
	readOnly = []string{"id", "agent_id", "source", "prompt_hash", "source_call_id", "source_issue_trace_id", "source_turn_index", "latest_verdict", "is_stale", "created_at", "updated_at"}
	nested   = map[string][]string{
		"audio_conditions": {"noise_asset", "snr_db"},
		"speech_style":     {"pace", "disfluencies", "accent"},
		"caller_behavior":  {"long_silence_seconds", "dtmf_sequence", "topic_change"},
		"telephony":        {"voicemail_answer"},
	}
)

// apply merges body (a request's JSON object) onto s: top-level fields
// replace, nested objects merge key by key (a PATCH of speech_style.pace
// keeps the accent). Unknown and read-only fields, wrong types and values
// out of range are recorded in f. create requires title and prompt.
func apply(body map[string]json.RawMessage, s *Settings, create bool, f api.Fields) {
	for k := range body {
		switch {
		case slices.Contains(readOnly, k):
			f.Add(k, "This field is read-only.")
		case !slices.Contains(writable, k):
			f.Add(k, "Unknown field.")
		}
	}
	str := func(name string, dst *string) bool {
		raw, ok := body[name]
		if !ok {
			return false
		}
		if json.Unmarshal(raw, dst) != nil || string(raw) == "null" {
			f.Add(name, "Must be a string.")
			return false
		}
		return true
	}
	if str("title", &s.Title) || create {
		s.Title = strings.TrimSpace(s.Title)
		checkText(f, "title", s.Title, MaxTitle)
	}
	if str("scenario_prompt", &s.ScenarioPrompt) || create {
		s.ScenarioPrompt = strings.TrimSpace(s.ScenarioPrompt)
		checkText(f, "scenario_prompt", s.ScenarioPrompt, MaxPrompt)
	}
	if raw, ok := body["labels"]; ok {
		var ls []string
		if json.Unmarshal(raw, &ls) != nil || string(raw) == "null" {
			f.Add("labels", "Must be a list of strings.")
		} else {
			s.Labels = checkLabels(f, ls)
		}
	}
	if str("direction", &s.Direction) {
		if msg := api.OneOf(s.Direction, Directions); msg != "" {
			f.Add("direction", msg)
		}
	}
	for name, keys := range nested {
		raw, ok := body[name]
		if !ok {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || m == nil {
			f.Add(name, "Must be an object.")
			continue
		}
		for k := range m {
			if !slices.Contains(keys, k) {
				f.Add(name+"."+k, "Unknown field.")
			}
		}
		applyNested(name, name, m, s, f)
	}
	if s.AudioConditions.NoiseAsset == "none" {
		s.AudioConditions.SNRdB = nil
	} else if s.AudioConditions.SNRdB == nil {
		f.Add("audio_conditions.snr_db", "Required when a noise asset is set; use one of 0, 5, 10, 20.")
	}
}

// MergeNested validates raw, one value of nested object name (for
// example a matrix axis entry), and merges it onto s like a PATCH of that
// object; errors are recorded under field (field.key for a key).
func MergeNested(name, field string, raw json.RawMessage, s *Settings, f api.Fields) {
	keys, ok := nested[name]
	if !ok {
		f.Add(field, "Unknown field.")
		return
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		f.Add(field, "Must be an object.")
		return
	}
	for k := range m {
		if !slices.Contains(keys, k) {
			f.Add(field+"."+k, "Unknown field.")
		}
	}
	applyNested(name, field, m, s, f)
	if s.AudioConditions.NoiseAsset == "none" {
		s.AudioConditions.SNRdB = nil
	} else if s.AudioConditions.SNRdB == nil {
		f.Add(field+".snr_db", "Required when a noise asset is set; use one of 0, 5, 10, 20.")
	}
}

// applyNested merges the known keys of one nested object; errors go
// under at.key.
func applyNested(name, at string, m map[string]json.RawMessage, s *Settings, f api.Fields) {
	enum := func(key string, dst *string, allowed []string) {
		raw, ok := m[key]
		if !ok {
			return
		}
		if json.Unmarshal(raw, dst) != nil || string(raw) == "null" {
			f.Add(at+"."+key, "Must be a string.")
			return
		}
		if msg := api.OneOf(*dst, allowed); msg != "" {
			f.Add(at+"."+key, msg)
		}
	}
	switch name {
	case "audio_conditions":
		enum("noise_asset", &s.AudioConditions.NoiseAsset, NoiseAssets)
		if raw, ok := m["snr_db"]; ok {
			var v *int
			if json.Unmarshal(raw, &v) != nil || (v != nil && !slices.Contains(SNRs, *v)) {
				f.Add(at+".snr_db", "Must be one of 0, 5, 10, 20.")
			} else {
				s.AudioConditions.SNRdB = v
			}
		}
	case "speech_style":
		enum("pace", &s.SpeechStyle.Pace, Paces)
		enum("disfluencies", &s.SpeechStyle.Disfluencies, Disfluencies)
		enum("accent", &s.SpeechStyle.Accent, Accents)
	case "caller_behavior":
		if raw, ok := m["long_silence_seconds"]; ok {
			var v int
			if json.Unmarshal(raw, &v) != nil || string(raw) == "null" || v < 0 || v > MaxSilence {
				f.Add(at+".long_silence_seconds", fmt.Sprintf("Must be an integer from 0 to %d.", MaxSilence))
			} else {
				s.CallerBehavior.LongSilenceSeconds = v
			}
		}
		var d string
		if raw, ok := m["dtmf_sequence"]; ok {
			if json.Unmarshal(raw, &d) != nil || string(raw) == "null" {
				f.Add(at+".dtmf_sequence", "Must be a string.")
			} else if !validDTMF(d) {
				f.Add(at+".dtmf_sequence", fmt.Sprintf("Must be at most %d of the keys 0-9, * and #.", MaxDTMF))
			} else {
				s.CallerBehavior.DTMFSequence = d
			}
		}
		if raw, ok := m["topic_change"]; ok {
			var t string
			if json.Unmarshal(raw, &t) != nil || string(raw) == "null" {
				f.Add(at+".topic_change", "Must be a string.")
			} else if msg := api.TooLong(t, MaxTopicChange); msg != "" {
				f.Add(at+".topic_change", msg)
			} else {
				s.CallerBehavior.TopicChange = strings.TrimSpace(t)
			}
		}
	case "telephony":
		if raw, ok := m["voicemail_answer"]; ok {
			if json.Unmarshal(raw, &s.Telephony.VoicemailAnswer) != nil || string(raw) == "null" {
				f.Add(at+".voicemail_answer", "Must be a boolean.")
			}
		}
	}
}

func checkText(f api.Fields, field, v string, max int) {
	switch {
	case v == "":
		f.Add(field, "This field is required and may not be blank.")
	case utf8.RuneCountInString(v) > max:
		f.Add(field, fmt.Sprintf("Ensure this field has no more than %d characters.", max))
	}
}

func checkLabels(f api.Fields, ls []string) []string {
	if len(ls) > MaxLabels {
		f.Add("labels", fmt.Sprintf("At most %d labels.", MaxLabels))
	}
	out := []string{}
	for _, l := range ls {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
			f.Add("labels", "Labels may not be blank.")
		case utf8.RuneCountInString(l) > MaxLabel:
			f.Add("labels", fmt.Sprintf("Each label has at most %d characters.", MaxLabel))
		case !slices.Contains(out, l):
			out = append(out, l)
		}
	}
	return out
}

func validDTMF(d string) bool {
	if len(d) > MaxDTMF {
		return false
	}
	for _, r := range d {
		if !strings.ContainsRune("0123456789*#", r) {
			return false
		}
	}
	return true
}
