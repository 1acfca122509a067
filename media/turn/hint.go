package turn

import "strings"

// openEnds are words a sentence does not end on: articles and
// possessives, conjunctions, prepositions that do not end phrasal verbs
// ("come in", "hold on" do end), contracted auxiliaries, and hesitation
// sounds. A partial transcript ending on one is a phrase the caller has
// not finished ("I want to book a", "and", "um"). Words that can end a
// sentence ("so", "it", "you", "can", "do") are left out.
var openEnds = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the my your our their his its every each another whose
		and or but because if when while although though unless until than nor whether
		to for of with from at about into onto between through during without per via
		i'm i'd i'll i've we're you're they're it's there's that's let's gonna wanna
		um uh uhm er erm hmm mm ah eh hm`) {
		openEnds[w] = true
	}
}

// Complete classifies a partial transcript by its last word: HintUnknown
// without words, HintIncomplete when the last word leaves a phrase open
// (an article, conjunction, preposition, contraction or "um"), else
// HintComplete. It is the semantic end-of-turn model: cheap enough to run
// on every partial, and it errs towards waiting only where a sentence
// cannot end.
func Complete(words string) Hint {
	f := strings.Fields(words)
	if len(f) == 0 {
		return HintUnknown
	}
	last := strings.ToLower(strings.Trim(f[len(f)-1], ".,;:!?\"'()"))
	if i := strings.IndexByte(last, '('); i > 0 {
		last = last[:i] // a PocketSphinx alternate pronunciation: "a(2)"
	}
	if openEnds[last] {
		return HintIncomplete
	}
	return HintComplete
}

// questionStarts are the words a question opens with: an interrogative, or
// an auxiliary before its subject ("can you", "is it"). A question may end
// rising, so its voice does not hold the floor the way a statement's does.
var questionStarts = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`what when where who whom whose why how which
		can could would will shall should may might must do does did is are was were am have has had`) {
		questionStarts[w] = true
	}
}

// EndOf is the semantic end-of-turn model: the words of the partial
// transcript (Complete) and the intonation that ended them (Contour).
// Words that can end a sentence are HintFinal when the voice falls, or
// when they are a question (which may rise); HintHold when a statement's
// voice stays level or rises, as a caller pausing mid-sentence does; and
// HintComplete when the voice does not tell. Words that cannot end, or
// none, are what Complete says.
func EndOf(words string, c Contour) Hint {
	h := Complete(words)
	if h != HintComplete || c == ContourUnknown {
		return h
	}
	if c == ContourFall {
		return HintFinal
	}
	first := strings.ToLower(strings.Trim(strings.Fields(words)[0], ".,;:!?\"'()"))
	if i := strings.IndexByte(first, '('); i > 0 {
		first = first[:i]
	}
	if questionStarts[first] {
		return HintFinal
	}
	return HintHold
}
