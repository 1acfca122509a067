package espeak_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts/espeak"
)

func TestVoicesMatchTheCommandLine(t *testing.T) {
	vs, err := espeak.Voices()
	require.NoError(t, err)
	require.NotEmpty(t, vs)
	byID := map[string]espeak.Voice{}
	for _, v := range vs {
		require.NotEmpty(t, v.Name)
		require.NotEmpty(t, v.Languages, "voice %s", v.Identifier)
		require.False(t, strings.HasPrefix(v.Identifier, "!v/"), "variants are listed separately")
		byID[v.Identifier] = v
	}
	us, ok := byID["gmw/en-US"]
	require.True(t, ok, "the en-US voice ships with espeak-ng-data")
	require.Equal(t, "en-us", us.Languages[0].Name)
	require.Equal(t, espeak.GenderMale, us.Gender)

	// The espeak-ng command reads the same data: same number of voices.
	out, err := exec.Command("espeak-ng", "--voices").Output()
	if err != nil {
		t.Fatalf("espeak-ng --voices: %v (install the espeak-ng package)", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, vs, len(lines)-1, "one voice per line after the header")
}

func TestVariantsHaveGenders(t *testing.T) {
	vs, err := espeak.Variants()
	require.NoError(t, err)
	genders := map[espeak.Gender]int{}
	for _, v := range vs {
		require.True(t, strings.HasPrefix(v.Identifier, "!v/"), v.Identifier)
		genders[v.Gender]++
	}
	require.Positive(t, genders[espeak.GenderFemale])
	require.Positive(t, genders[espeak.GenderMale])
	// Listing twice gives the same answer (the library reuses its table).
	again, err := espeak.Variants()
	require.NoError(t, err)
	require.Equal(t, vs, again)
}
