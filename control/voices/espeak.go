package voices

import (
	"context"
	"path"
	"strings"

	"github.com/voiced/voiced/ai/tts/espeak"
)

// Espeak is the offline espeak-ng provider of the voice catalog.
// Every espeak-ng language voice appears twice: as "espeak:<voice>" with
// the voice file's own gender, and as "espeak:<voice>+f3" with espeak-ng's
// "female3" variant. The part after "espeak:" is what espeak-ng's
// SetVoiceByName takes.
type Espeak struct{}

// espeakFemale is the variant that gives every language voice a female
// twin (espeak-ng-data/voices/!v/f3).
const espeakFemale = "f3"

// CatalogVoices lists the installed espeak-ng voices.
func (Espeak) CatalogVoices(context.Context) ([]Voice, error) {
	vs, err := espeak.Voices()
	if err != nil {
		return nil, err
	}
	var out []Voice
	for _, v := range vs {
		var langs []string
		seen := map[string]bool{}
		for _, l := range v.Languages {
			tag, ok := providerLang(l.Name)
			if ok && !seen[tag] {
				seen[tag] = true
				langs = append(langs, tag)
			}
		}
		if len(langs) == 0 {
			continue
		}
		id := strings.ToLower(path.Base(v.Identifier))
		display := strings.ReplaceAll(v.Name, "_", " ")
		var g *string
		if s := v.Gender.String(); s != "" {
			g = &s
		}
		female := "female"
		out = append(out,
			Voice{Name: "espeak:" + id, DisplayName: display, Provider: "espeak-ng", Category: "offline", Gender: g, Languages: langs},
			Voice{Name: "espeak:" + id + "+" + espeakFemale, DisplayName: display + ", female", Provider: "espeak-ng", Category: "offline", Gender: &female, Languages: langs},
		)
	}
	return out, nil
}
