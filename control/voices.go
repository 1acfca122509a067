package control

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

// Voice is one entry of the voice catalog. Name is the value an agent's
// voice takes; Languages are normalized BCP-47 tags, preferred first.
type Voice struct {
	Name        string   `json:"name"`
	DisplayName string   `json:"display_name"`
	Provider    string   `json:"provider"`
	Category    string   `json:"category"`
	Gender      *string  `json:"gender"`
	Languages   []string `json:"languages"`
}

// VoiceProvider is a configured TTS provider, listing the voices it
// really has.
type VoiceProvider interface {
	CatalogVoices(ctx context.Context) ([]Voice, error)
}

// catalog is the merged, immutable voice list of every provider.
type catalog struct {
	voices    []Voice
	byName    map[string]Voice
	languages []string
	// categories offered, plus "custom" (cloned voices) which always is.
	categories []string
}

func (c *catalog) has(name string) bool { _, ok := c.byName[name]; return ok }

// loadCatalog lists every provider's voices; a provider that fails is
// logged and left out so the others stay usable.
func loadCatalog(ctx context.Context, providers []VoiceProvider, log *slog.Logger) *catalog {
	c := &catalog{byName: map[string]Voice{}}
	langs := map[string]bool{}
	cats := map[string]bool{"custom": true}
	for _, p := range providers {
		vs, err := p.CatalogVoices(ctx)
		if err != nil {
			if log != nil {
				log.Warn("voice provider unavailable; its voices are not in the catalog", "err", err)
			}
			continue
		}
		for _, v := range vs {
			if v.Name == "" || c.has(v.Name) || len(v.Languages) == 0 {
				continue
			}
			c.voices = append(c.voices, v)
			c.byName[v.Name] = v
			cats[v.Category] = true
			for _, l := range v.Languages {
				langs[l] = true
			}
		}
	}
	for l := range langs {
		c.languages = append(c.languages, l)
	}
	slices.Sort(c.languages)
	for k := range cats {
		c.categories = append(c.categories, k)
	}
	slices.Sort(c.categories)
	return c
}

// supports reports whether v speaks tag: one of its languages is tag, or
// tag is a bare language ("pt") and v speaks a regional form ("pt-BR").
func (v Voice) supports(tag string) bool {
	for _, l := range v.Languages {
		if l == tag || (!strings.Contains(tag, "-") && langBase(l) == tag) {
			return true
		}
	}
	return false
}

// voicesView is GET /v1/voices: the filtered voices, every language the
// catalog offers, and the custom-voice surcharges (none today).
type voicesView struct {
	Voices     []Voice        `json:"voices"`
	Languages  []string       `json:"languages"`
	Surcharges map[string]any `json:"surcharges"`
}

func (s *Server) listVoices(c fiber.Ctx, _ *storage.Principal) error {
	cat := s.res.catalog
	f := fields{}
	var want []string
	if q := strings.TrimSpace(c.Query("languages")); q != "" {
		for _, part := range strings.Split(q, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			tag, ok := normalizeLang(part)
			if !ok {
				f.add("languages", `"`+strings.TrimSpace(part)+`" is not a BCP-47 language tag such as en-US.`)
				continue
			}
			want = append(want, tag)
		}
	}
	category := strings.ToLower(strings.TrimSpace(c.Query("category")))
	if category != "" && !slices.Contains(cat.categories, category) {
		f.add("category", `"`+category+`" is not a voice category; use one of: `+strings.Join(cat.categories, ", ")+".")
	}
	gender := strings.ToLower(strings.TrimSpace(c.Query("gender")))
	if gender != "" && gender != "male" && gender != "female" && gender != "neutral" {
		f.add("gender", `"`+gender+`" is not a gender; use male, female or neutral.`)
	}
	if err := f.err(); err != nil {
		return err
	}
	out := voicesView{Voices: []Voice{}, Languages: cat.languages, Surcharges: map[string]any{}}
	if out.Languages == nil {
		out.Languages = []string{}
	}
	// Ready custom voices come first (spec 4.6); cloning lands with the
	// custom voice issue, so the catalog holds provider voices only.
	for _, v := range cat.voices {
		if category != "" && v.Category != category {
			continue
		}
		if gender != "" {
			g := "neutral"
			if v.Gender != nil {
				g = *v.Gender
			}
			if g != gender {
				continue
			}
		}
		ok := true
		for _, l := range want {
			if !v.supports(l) {
				ok = false
				break
			}
		}
		if ok {
			out.Voices = append(out.Voices, v)
		}
	}
	return c.Status(http.StatusOK).JSON(out)
}
