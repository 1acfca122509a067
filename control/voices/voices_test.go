package voices_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/language"

	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/control/voices"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

type catalogView struct {
	Voices []struct {
		Name        string   `json:"name"`
		DisplayName string   `json:"display_name"`
		Provider    string   `json:"provider"`
		Category    string   `json:"category"`
		Gender      *string  `json:"gender"`
		Languages   []string `json:"languages"`
	}
	Languages  []string
	Surcharges map[string]any
}

func TestVoiceCatalog(t *testing.T) {
	a := controltest.New(t, sqltest.New(t, migrations.SQLite))
	w := a.World()
	get := func(q string) catalogView {
		t.Helper()
		r := a.Do("GET", "/v1/voices"+q, w.MembK, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		var v catalogView
		require.NoError(t, json.Unmarshal(r.Body, &v))
		return v
	}
	all := get("")
	// The catalog is what espeak-ng really has: two entries per voice that
	// speaks a known language (Klingon and Pyash have no BCP-47 tag).
	ev, err := espeak.Voices()
	require.NoError(t, err)
	known := 0
	for _, v := range ev {
		if slices.ContainsFunc(v.Languages, func(l espeak.Language) bool {
			tag, _ := language.Parse(l.Name)
			b, _ := tag.Base()
			return b.String() != "und"
		}) {
			known++
		}
	}
	require.Greater(t, known, 100)
	require.Len(t, all.Voices, 2*known)
	require.NotNil(t, all.Surcharges)
	require.Empty(t, all.Surcharges)
	require.True(t, slices.IsSorted(all.Languages))
	require.Contains(t, all.Languages, "en-US")
	byName := map[string]int{}
	for i, v := range all.Voices {
		byName[v.Name] = i
		require.Equal(t, "offline", v.Category)
		require.Equal(t, "espeak-ng", v.Provider)
		require.NotEmpty(t, v.Languages)
	}
	us := all.Voices[byName["espeak:en-us"]]
	require.Equal(t, []string{"en-US", "en"}, us.Languages)
	require.Equal(t, "male", *us.Gender)
	require.Equal(t, "English (America)", us.DisplayName)
	require.Equal(t, "female", *all.Voices[byName["espeak:en-us+f3"]].Gender)

	both := get("?languages=en-US,en")
	require.NotEmpty(t, both.Voices)
	require.Less(t, len(both.Voices), len(all.Voices))
	for _, v := range both.Voices {
		require.Contains(t, v.Languages, "en-US")
	}
	require.Equal(t, all.Languages, both.Languages, "languages lists everything the catalog offers")
	// A bare language matches regional voices: pt-BR speaks pt.
	for _, v := range get("?languages=pt").Voices {
		require.True(t, slices.ContainsFunc(v.Languages, func(l string) bool { return l == "pt" || len(l) > 2 && l[:3] == "pt-" }), v.Name)
	}
	female := get("?gender=female&languages=fr")
	require.NotEmpty(t, female.Voices)
	for _, v := range female.Voices {
		require.Equal(t, "female", *v.Gender)
	}
	require.Len(t, get("?category=offline").Voices, len(all.Voices))
	require.Empty(t, get("?category=custom").Voices, "no cloned voices yet")
	require.Empty(t, get("?languages=en-US,ja").Voices, "voices must speak every language asked for")
	for _, q := range []string{"?category=premium", "?gender=robot", "?languages=en-US,not%20a%20tag"} {
		r := a.Do("GET", "/v1/voices"+q, w.MembK, nil)
		require.Equal(t, 400, r.Status, q)
	}
	require.Equal(t, 401, a.Do("GET", "/v1/voices", "", nil).Status)
}

// brokenProvider is a TTS provider that cannot list its voices.
type brokenProvider struct{}

func (brokenProvider) CatalogVoices(context.Context) ([]voices.Voice, error) {
	return nil, errors.New("provider down")
}

// fixedProvider lists one voice.
type fixedProvider struct{}

func (fixedProvider) CatalogVoices(context.Context) ([]voices.Voice, error) {
	g := "female"
	return []voices.Voice{{Name: "cloud:aria", DisplayName: "Aria", Provider: "cloud", Category: "premium", Gender: &g, Languages: []string{"en-US", "es-US"}}}, nil
}

func TestVoiceProvidersMerge(t *testing.T) {
	db := sqltest.New(t, migrations.SQLite)
	a := controltest.NewWith(t, db, control.Config{}, control.WithVoiceProviders(brokenProvider{}, fixedProvider{}))
	w := a.World()
	r := a.Do("GET", "/v1/voices?category=premium", w.MembK, nil)
	require.Equal(t, 200, r.Status)
	var v catalogView
	require.NoError(t, json.Unmarshal(r.Body, &v))
	require.Len(t, v.Voices, 1)
	require.Equal(t, []string{"en-US", "es-US"}, v.Languages)
	// The only voice becomes the default; others are refused.
	ag := a.Agent(w.MembK, "Aria", nil)
	require.Equal(t, "cloud:aria", ag["voice"])
	require.Equal(t, 400, a.Do("POST", "/v1/agents", w.MembK, map[string]any{"name": "x", "voice": "espeak:en-us"}).Status)
	// A default voice that is not in the catalog stops the server from starting.
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: controltest.SigningKey})
	require.NoError(t, err)
	_, err = control.New(control.Config{Resources: control.ResourcesConfig{DefaultVoice: "espeak:en-us"}}, nil, store, controltest.Limiter(t), control.WithVoiceProviders(fixedProvider{}))
	require.ErrorContains(t, err, "espeak:en-us")
	_, err = control.New(control.Config{Resources: control.ResourcesConfig{DefaultProduct: "storm-max"}}, nil, store, controltest.Limiter(t))
	require.ErrorContains(t, err, "storm-max")
	_, err = control.New(control.Config{Resources: control.ResourcesConfig{DIDPool: []numbers.DID{{Number: "415"}}}}, nil, store, controltest.Limiter(t))
	require.ErrorContains(t, err, "E.164")
}
