package knowledge

import (
	"strings"

	"github.com/voiced/voiced/storage"
)

// Chunk sizes are counted in words; a word is about 1.3 tokens of an
// English BPE vocabulary, so the defaults (230 words, 30 of overlap) are
// about 300 and 40 tokens.

// chunkBlocks cuts blocks into chunks of at most maxWords words. It splits
// on structure before size: a chunk never spans two contexts (headings,
// pages), blocks are packed whole while they fit, and only a block larger
// than a chunk is cut inside, at word boundaries. Consecutive prose chunks
// of one context share overlap words so a sentence cut at a boundary is
// found from either side; row blocks (CSV) never overlap, each chunk
// carries the header as its context instead.
func chunkBlocks(blocks []block, maxWords, overlap int) []storage.KnowledgeChunk {
	var (
		out     []storage.KnowledgeChunk
		cur     []string // words of the chunk being built
		curCtx  string
		curRows bool
		lines   []string // its blocks, joined with blank lines when emitted
	)
	flush := func(carry bool) {
		if len(lines) == 0 {
			return
		}
		sep := "\n\n"
		if curRows {
			sep = "\n"
		}
		out = append(out, storage.KnowledgeChunk{Position: len(out), Context: curCtx, Text: strings.Join(lines, sep)})
		lines = nil
		if carry && !curRows && overlap > 0 && len(cur) > overlap {
			cur = append([]string(nil), cur[len(cur)-overlap:]...)
			lines = []string{strings.Join(cur, " ")}
			return
		}
		cur = nil
	}
	for _, b := range blocks {
		words := strings.Fields(b.Text)
		if len(words) == 0 {
			continue
		}
		if b.Context != curCtx || b.Rows != curRows {
			flush(false)
			curCtx, curRows = b.Context, b.Rows
		}
		if len(cur)+len(words) <= maxWords {
			cur = append(cur, words...)
			lines = append(lines, b.Text)
			continue
		}
		flush(true)
		if len(words) <= maxWords {
			// The block fits a chunk: keep as much of the carried overlap
			// as leaves it room.
			if keep := maxWords - len(words); len(cur) > keep {
				cur = cur[len(cur)-keep:]
				lines = nil
				if keep > 0 {
					lines = []string{strings.Join(cur, " ")}
				}
			}
			cur = append(cur, words...)
			lines = append(lines, b.Text)
			continue
		}
		// A block larger than a chunk: windows of maxWords words, each
		// starting overlap words before the previous one ended.
		step := max(maxWords-overlap, 1)
		if b.Rows {
			step = maxWords
		}
		for i := 0; i < len(words); i += step {
			end := min(i+maxWords, len(words))
			cur = append([]string(nil), words[i:end]...)
			lines = []string{strings.Join(cur, " ")}
			if end == len(words) {
				break
			}
			flush(false)
		}
	}
	flush(false)
	return out
}
