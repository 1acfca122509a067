package espeak

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVoiceResolution pins how voice and language names map to the voice
// files espeak-ng selects.
func TestVoiceResolution(t *testing.T) {
	s, err := New(Config{})
	require.NoError(t, err)
	defer s.Close()
	for in, want := range map[string]string{
		"espeak:en-us":    "gmw/en-US",
		"espeak:en-us+f3": "gmw/en-US+f3",
		"EN-US":           "gmw/en-US",
		"gmw/en-US":       "gmw/en-US",
		"espeak:en":       "gmw/en",
		"en-gb":           "gmw/en",
		"en-gb-x-rp+m1":   "gmw/en-GB-x-rp+m1",
		"fr":              "roa/fr",
		"espeak:fr-fr":    "roa/fr",
		"de":              "gmw/de",
	} {
		got, err := s.voiceName(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, want := range map[string]string{
		"en-US": "gmw/en-US", "en_GB": "gmw/en", "fr-FR": "roa/fr", "fr-CA": "roa/fr", "de-AT": "gmw/de", "pt-BR": "roa/pt-BR",
	} {
		got, err := s.language(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"klingon", "en-us+nosuch", "", "+f3", "mb-fr1", "mb/mb-fr1"} {
		_, err := s.voiceName(bad)
		require.ErrorIs(t, err, ErrUnknownVoice, bad)
	}
	_, err = s.language("tlh")
	require.ErrorIs(t, err, ErrUnknownVoice)
}
