package sim

import (
	"math/rand/v2"
	"strings"
)

// Voice is the caller's voice for a scenario's accent: the TTS voice and
// language used, and, when the provider has no voice for the accent,
// the nearest one used instead and why (kept in a run's metadata).
type Voice struct {
	Accent   string `json:"accent"`
	Voice    string `json:"voice"`
	Language string `json:"language"`
	// Mapped is true when Voice is a stand-in for the accent.
	Mapped bool   `json:"mapped"`
	Note   string `json:"note,omitempty"`
}

// espeakVoices maps the spec's accents to espeak-ng voices. espeak-ng
// has en-US, en-GB and Latin American Spanish (es-419, which it also
// names es-mx); it has no Indian, Australian or Canadian French voice
// (its fr-ca and es-mx entries are MBROLA voices, which need the MBROLA
// binary and databases not installed here). The stand-ins are the
// nearest by pronunciation: Indian and Australian English are
// non-rhotic, like British English, so en-GB; Canadian French is French,
// so espeak's fr (France).
var espeakVoices = map[string]Voice{
	"default": {Voice: "en-us", Language: "en-US"},
	"en-US":   {Voice: "en-us", Language: "en-US"},
	"en-GB":   {Voice: "en-gb", Language: "en-GB"},
	"es-MX":   {Voice: "es-419", Language: "es-MX"},
	"en-IN":   {Voice: "en-gb", Language: "en-IN", Mapped: true, Note: "espeak-ng has no Indian English voice; en-gb (non-rhotic) stands in"},
	"en-AU":   {Voice: "en-gb", Language: "en-AU", Mapped: true, Note: "espeak-ng has no Australian English voice; en-gb (non-rhotic) stands in"},
	"fr-CA":   {Voice: "fr-fr", Language: "fr-CA", Mapped: true, Note: "espeak-ng has no Canadian French voice (its fr-ca is MBROLA, not installed); fr-fr stands in"},
}

// VoiceFor is the espeak-ng voice for accent ("" is default).
func VoiceFor(accent string) Voice {
	if accent == "" {
		accent = "default"
	}
	v, ok := espeakVoices[accent]
	if !ok {
		v = Voice{Voice: "en-us", Language: "en-US", Mapped: true, Note: "unknown accent; en-us stands in"}
	}
	v.Accent = accent
	return v
}

// Speed is the TTS speed for a scenario's pace: espeak-ng's 175 words a
// minute scaled to 130 (slow) or 230 (fast).
func Speed(pace string) float64 {
	switch pace {
	case "slow":
		return 130.0 / 175
	case "fast":
		return 230.0 / 175
	}
	return 1
}

// fillers are what a light-disfluency caller says while thinking.
var fillers = []string{"um,", "uh,", "er,", "you know,", "like,"}

// Disfluent inserts hesitations into text ("light"): a filler before
// about one word in six and a repeated word about one in ten, chosen by
// r so a run is reproducible. The first word always gets a filler, so
// every turn of a light caller has at least one.
func Disfluent(text string, r *rand.Rand) string {
	words := strings.Fields(text)
	if len(words) == 0 {
		return text
	}
	out := make([]string, 0, len(words)*2)
	for i, w := range words {
		if i == 0 || r.IntN(6) == 0 {
			out = append(out, fillers[r.IntN(len(fillers))])
		}
		if len(w) > 2 && r.IntN(10) == 0 {
			bare := strings.TrimRight(w, ".,?!;:")
			out = append(out, bare+",") // "I, I need"
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}
