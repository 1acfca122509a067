package voices

import (
	"strings"

	"golang.org/x/text/language"
)

// NormalizeLang returns the canonical BCP-47 spelling of tag ("en-us" ->
// "en-US"), or false when tag is not a well-formed language tag or names
// no language ("und").
func NormalizeLang(tag string) (string, bool) {
	tag = strings.TrimSpace(strings.ReplaceAll(tag, "_", "-"))
	if tag == "" || len(tag) > 64 {
		return "", false
	}
	t, err := language.Parse(tag)
	if err != nil {
		return "", false
	}
	if b, _ := t.Base(); b.String() == "und" {
		return "", false
	}
	return t.String(), true
}

// langBase returns the language subtag of a normalized tag ("en-US" ->
// "en").
func langBase(tag string) string {
	b, _, _ := strings.Cut(tag, "-")
	return b
}

// providerLang maps a provider's language name to BCP-47 leniently: a
// provider's private spellings ("en-us-nyc", "chr-US-Qaaa-x-west") keep
// their well-formed, known part ("en-US", "chr-US-x-west"). Names with no
// known language are dropped.
func providerLang(name string) (string, bool) {
	t, _ := language.Parse(strings.ReplaceAll(strings.TrimSpace(name), "_", "-"))
	if b, _ := t.Base(); b.String() == "und" {
		return "", false
	}
	return t.String(), true
}
