package control

import "github.com/voiced/voiced/control/voices"

// The voice catalog's types (control/voices), named here for callers of
// WithVoiceProviders.
type (
	// Voice is one entry of the voice catalog.
	Voice = voices.Voice
	// VoiceProvider is a configured TTS provider, listing its voices.
	VoiceProvider = voices.Provider
	// EspeakVoices is the offline espeak-ng provider of the voice catalog.
	EspeakVoices = voices.Espeak
)

// normalizeLang returns the canonical BCP-47 spelling of tag
// (voices.NormalizeLang).
func normalizeLang(tag string) (string, bool) { return voices.NormalizeLang(tag) }
