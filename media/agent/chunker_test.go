package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChunker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		deltas []string
		want   []string
	}{
		{"sentences", []string{"Hello there. How", " are you? Fine"}, []string{"Hello there.", "How are you?", "Fine"}},
		{"word by word", strings.SplitAfter("Sure! I can help. Tell me more.", " "), []string{"Sure!", "I can help.", "Tell me more."}},
		{"decimal waits", []string{"It costs 3.", "5 dollars. Ok"}, []string{"It costs 3.5 dollars.", "Ok"}},
		{"closing quote", []string{`He said "stop." Then left.`}, []string{`He said "stop."`, "Then left."}},
		{"newline", []string{"A list\n- one\n"}, []string{"A list", "- one"}},
		{"ellipsis", []string{"Well… let me see."}, []string{"Well…", "let me see."}},
		{"cjk", []string{"你好。我很好"}, []string{"你好。", "我很好"}},
		{"long clause", []string{strings.Repeat("word ", 30) + "then, " + strings.Repeat("more ", 10)},
			[]string{strings.TrimSpace(strings.Repeat("word ", 30) + "then,"), strings.TrimSpace(strings.Repeat("more ", 10))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c chunker
			var got []string
			for _, d := range tc.deltas {
				got = append(got, c.push(d)...)
			}
			if rest := c.flush(); rest != "" {
				got = append(got, rest)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSpokenText(t *testing.T) {
	segs := []segment{
		{text: "One moment.", start: 0, end: 100, hidden: true},
		{text: "The answer is four.", start: 100, end: 500},
		{text: "Anything else?", start: 500, end: 700},
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, ""}, {100, ""}, {200, "The"}, {300, "The answer"}, {500, "The answer is four."},
		{600, "The answer is four. Anything"}, {700, "The answer is four. Anything else?"},
	} {
		require.Equal(t, tc.want, spokenText(segs, tc.n), "n=%d", tc.n)
	}
}
