package call

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
)

// TestSpeakablePassages: passages come back one per line after their
// document's name; a long one is cut to whole sentences around the one
// that mentions the query most, within passageChars.
func TestSpeakablePassages(t *testing.T) {
	filler := strings.Repeat("Rooms are cleaned daily by our friendly staff. ", 20)
	long := filler + "Late checkout costs 35 euros and ends at two. " + filler
	out := speakable([]control.KnowledgePassage{{DocumentName: "Policies", Text: long}, {DocumentName: "Menu", Text: "Breakfast  is\nserved at seven."}}, "late checkout cost")
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 2)
	require.True(t, strings.HasPrefix(lines[0], `From "Policies": `), lines[0])
	require.Contains(t, lines[0], "Late checkout costs 35 euros and ends at two.")
	body := strings.TrimPrefix(lines[0], `From "Policies": `)
	require.LessOrEqual(t, utf8.RuneCountInString(body), passageChars)
	require.True(t, strings.HasSuffix(body, "."), "whole sentences: %q", body)
	require.Equal(t, `From "Menu": Breakfast is served at seven.`, lines[1], "short passages whole, spaces folded")

	// One sentence longer than the budget is cut at a word.
	one := excerpt(strings.Repeat("word ", 200), words("word"), 50)
	require.LessOrEqual(t, utf8.RuneCountInString(one), 51)
	require.True(t, strings.HasSuffix(one, "word…"), one)
	require.Empty(t, speakable(nil, "anything"))
}
