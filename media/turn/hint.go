package turn

import "strings"

// openEnds are words a sentence does not end on: articles and
// possessives, conjunctions, prepositions that do not end phrasal verbs
// ("come in", "hold on" do end), contracted auxiliaries, and hesitation
// sounds. A partial transcript ending on one is a phrase the caller has
// not finished ("I want to book a", "and", "um"). Words that can end a
// sentence ("so", "it", "you", "can", "do") are left out.
var openEnds = wordSet(`a an the my your our their his its every each another whose
	and or but because if when while although though unless until than nor whether
	to for of with from at about into onto between through during without per via
	i'm i'd i'll i've we're you're they're it's there's that's let's gonna wanna
	um uh uhm er erm hmm mm ah eh hm`)

// questionStarts are the words a question opens with: an interrogative, or
// an auxiliary before its subject ("can you", "is it"). A question may end
// rising, so its voice does not hold the floor the way a statement's does.
var questionStarts = wordSet(`what when where who whom whose why how which
	can could would will shall should may might must do does did is are was were am have has had`)

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// word is a transcript's word as the sets hold it: lower case, without
// punctuation or PocketSphinx's alternate-pronunciation mark ("a(2)").
func word(w string) string {
	w = strings.ToLower(strings.Trim(w, ".,;:!?\"'()"))
	if i := strings.IndexByte(w, '('); i > 0 {
		w = w[:i]
	}
	return w
}

// ends classifies words by their last word, as Complete does, and returns
// their first.
func ends(words string) (h Hint, first string) {
	f := strings.Fields(words)
	if len(f) == 0 {
		return HintUnknown, ""
	}
	if openEnds[word(f[len(f)-1])] {
		return HintIncomplete, word(f[0])
	}
	return HintComplete, word(f[0])
}

// Complete classifies a partial transcript by its last word: HintUnknown
// without words, HintIncomplete when the last word leaves a phrase open
// (an article, conjunction, preposition, contraction or "um"), else
// HintComplete. It is the words' half of the semantic end-of-turn model
// (EndOf): cheap enough to run on every partial, and it errs towards
// waiting only where a sentence cannot end.
func Complete(words string) Hint {
	h, _ := ends(words)
	return h
}

// EndOf is the semantic end-of-turn model: the words of the partial
// transcript (Complete) and the intonation that ended them (Contour).
// Words that can end a sentence are HintFinal when the voice falls, or
// when they are a question (which may rise); HintHold when a statement's
// voice stays level or rises, as a caller pausing mid-sentence does; and
// HintComplete when the voice does not tell. Words that cannot end, or
// none, are what Complete says.
func EndOf(words string, c Contour) Hint {
	h, first := ends(words)
	switch {
	case h != HintComplete || c == ContourUnknown:
		return h
	case c == ContourFall, questionStarts[first]:
		return HintFinal
	}
	return HintHold
}
