package agent

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// chunker cuts streamed model text into sentences, so speech can start as
// soon as the first one is complete instead of after the whole answer.
// A sentence ends at ., !, ? or … followed by whitespace (not inside a
// number like 3.5), at a newline, or, past maxChunk characters, at the
// last comma, semicolon or colon (else the last space) so a long sentence
// does not hold speech back.
type chunker struct {
	buf strings.Builder
}

// maxChunk bounds how long a sentence may grow before it is cut at a
// weaker boundary.
const maxChunk = 160

// minChunk is the shortest piece cut at a weaker boundary, so "Well, " is
// not synthesized alone.
const minChunk = 20

// push appends text and returns the sentences it completed.
func (c *chunker) push(text string) []string {
	c.buf.WriteString(text)
	var out []string
	for {
		s := c.buf.String()
		cut := sentenceEnd(s)
		if cut < 0 && len(s) > maxChunk {
			cut = weakCut(s)
		}
		if cut <= 0 {
			return out
		}
		if piece := strings.TrimSpace(s[:cut]); piece != "" {
			out = append(out, piece)
		}
		rest := s[cut:]
		c.buf.Reset()
		c.buf.WriteString(rest)
	}
}

// flush returns what is left, if anything.
func (c *chunker) flush() string {
	s := strings.TrimSpace(c.buf.String())
	c.buf.Reset()
	return s
}

// sentenceEnd returns the index just past the end of the first complete
// sentence in s (including the whitespace that confirmed it), or -1.
func sentenceEnd(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		j := i + size
		switch {
		case r == '\n':
			if strings.TrimSpace(s[:i]) != "" {
				return j
			}
		case r == '.' || r == '!' || r == '?' || r == '…' || r == '。' || r == '！' || r == '？':
			// Take closing quotes and brackets with the sentence.
			for j < len(s) && strings.ContainsRune(`"')]”’`, rune(s[j])) {
				j++
			}
			if j >= len(s) {
				return -1 // wait: more text may follow ("3." of "3.5")
			}
			next, _ := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(next) || r == '。' || r == '！' || r == '？' {
				return j
			}
		}
		i += size
	}
	return -1
}

// weakCut returns where to cut a long s: after the last clause mark or
// space at least minChunk characters in, or 0 when there is none.
func weakCut(s string) int {
	if i := strings.LastIndexAny(s, ",;:"); i >= minChunk {
		return i + 1
	}
	if i := strings.LastIndexByte(s, ' '); i >= minChunk {
		return i + 1
	}
	return 0
}
