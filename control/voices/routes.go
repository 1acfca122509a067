package voices

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

type handlers struct {
	catalog *Catalog
}

// Routes returns GET /v1/voices over cat.
func Routes(cat *Catalog) []api.Route {
	h := &handlers{catalog: cat}
	return []api.Route{
		{Method: "GET", Path: "/v1/voices", Summary: "Voice catalog: query languages (comma list; voices must speak all), category, gender; returns {voices, languages, surcharges}", Tag: "voices", Auth: api.AuthOrg, ResSchema: "VoiceCatalog", Errors: []int{400}, Handler: h.list},
	}
}

func (h *handlers) list(c fiber.Ctx, _ *storage.Principal) error {
	cat := h.catalog
	f := api.Fields{}
	var want []string
	if q := strings.TrimSpace(c.Query("languages")); q != "" {
		for _, part := range strings.Split(q, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			tag, ok := NormalizeLang(part)
			if !ok {
				f.Add("languages", `"`+strings.TrimSpace(part)+`" is not a BCP-47 language tag such as en-US.`)
				continue
			}
			want = append(want, tag)
		}
	}
	category := strings.ToLower(strings.TrimSpace(c.Query("category")))
	if category != "" && !slices.Contains(cat.categories, category) {
		f.Add("category", `"`+category+`" is not a voice category; use one of: `+strings.Join(cat.categories, ", ")+".")
	}
	gender := strings.ToLower(strings.TrimSpace(c.Query("gender")))
	if gender != "" && gender != "male" && gender != "female" && gender != "neutral" {
		f.Add("gender", `"`+gender+`" is not a gender; use male, female or neutral.`)
	}
	if err := f.Err(); err != nil {
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
