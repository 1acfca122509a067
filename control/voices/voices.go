package voices

import (
	"context"
	"log/slog"
	"slices"
	"strings"
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

// Provider is a configured TTS provider, listing the voices it really
// has.
type Provider interface {
	CatalogVoices(ctx context.Context) ([]Voice, error)
}

// Catalog is the merged, immutable voice list of every provider.
type Catalog struct {
	voices    []Voice
	byName    map[string]Voice
	languages []string
	// categories offered, plus "custom" (cloned voices) which always is.
	categories []string
}

// Has reports whether the catalog has a voice named name.
func (c *Catalog) Has(name string) bool { _, ok := c.byName[name]; return ok }

// Voices lists the catalog's voices in provider order.
func (c *Catalog) Voices() []Voice { return c.voices }

// Load lists every provider's voices; a provider that fails is
// logged and left out so the others stay usable.
func Load(ctx context.Context, providers []Provider, log *slog.Logger) *Catalog {
	c := &Catalog{byName: map[string]Voice{}}
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
			if v.Name == "" || c.Has(v.Name) || len(v.Languages) == 0 {
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
