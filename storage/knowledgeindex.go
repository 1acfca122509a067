package storage

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"github.com/voiced/voiced/storage/migrations"
)

// The knowledge term index (migration 00010; docs/decisions.md,
// "Knowledge", search) is the same on SQLite and PostgreSQL: the store
// splits and stems text itself and writes, per document, one cell per
// (term, block of chunks) holding that term's postings there.

// BM25's parameters. Length normalization uses a fixed reference length
// instead of the corpus's mean chunk length: chunks are cut to a target
// size, so the mean sits near it by construction, and a weight computed at
// ingestion never goes stale as the corpus grows. idf, the part that does
// move with the corpus, is computed at every search from live counts.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// bm25RefLen is the reference chunk length in index terms: a chunk of
	// the chunker's 230 words of English prose holds about 120 once stop
	// words are dropped.
	bm25RefLen = 120
	// weightScale quantizes a term weight (below k1+1 = 2.2) to 16 bits.
	weightScale = 16384
	// cellChunks is how many consecutive chunks of a document share a
	// cell. Smaller blocks bound a cell's best score more tightly (fewer
	// postings read) but write more rows per document. 2048 makes every
	// text document (at most 1 MiB, about 1,250 chunks) one block: with
	// 1,024 a term found in both blocks wrote two cells (docs/decisions.md,
	// issue 27, ingestion).
	cellChunks = 2048
	// maxTermBytes drops longer "words" (hashes, base64) from the index.
	maxTermBytes = 64
)

// termWeight is BM25's term-frequency component of a term found tf times
// in a chunk of length index terms, quantized.
func termWeight(tf, length int) uint16 {
	f := float64(tf)
	w := f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(length)/bm25RefLen))
	return uint16(math.Round(w * weightScale))
}

// idf is BM25's inverse document frequency of a term found in df of n
// chunks (never negative).
func idf(n, df int64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// termSplitter turns text into index terms: words (runs of letters and
// digits) lowercased, English stop words dropped, the rest stemmed by the
// Snowball English stemmer (as PostgreSQL's english configuration). It
// remembers each word's stem; one splitter serves one document.
type termSplitter struct {
	stems map[string]string
	lower strings.Builder
}

func newTermSplitter() *termSplitter { return &termSplitter{stems: map[string]string{}} }

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// asciiWord marks the ASCII letters and digits, the common case of
// isWordRune without a unicode table lookup.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// terms appends the index terms of text to dst.
func (s *termSplitter) terms(dst []string, text string) []string {
	for i := 0; i < len(text); {
		// Skip separators.
		r, n := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(text[i:])
		}
		if !isWordRune(r) {
			i += n
			continue
		}
		start := i
		for i < len(text) {
			r, n = rune(text[i]), 1
			if r >= utf8.RuneSelf {
				r, n = utf8.DecodeRuneInString(text[i:])
			}
			if !isWordRune(r) {
				break
			}
			i += n
		}
		if t := s.term(text[start:i]); t != "" {
			dst = append(dst, t)
		}
	}
	return dst
}

// term is the index term of one word, "" for a stop word or a word too
// long to index.
func (s *termSplitter) term(word string) string {
	if len(word) > maxTermBytes {
		return ""
	}
	if t, ok := s.stems[word]; ok {
		return t
	}
	lower := word
	if hasUpper(word) {
		lower = strings.ToLower(word)
	}
	t, ok := s.stems[lower]
	if !ok {
		t = stem(lower)
		s.stems[lower] = t
	}
	s.stems[word] = t
	return t
}

// stemCache remembers stems across documents (stemming was a fifth of
// ingestion's CPU); it is emptied when it reaches stemCacheMax words.
var stemCache = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

const stemCacheMax = 200_000

// stem is the index term of a lowercase word ("" for a stop word).
func stem(lower string) string {
	stemCache.RLock()
	t, ok := stemCache.m[lower]
	stemCache.RUnlock()
	if ok {
		return t
	}
	if !stopWords[lower] {
		t = english.Stem(lower, true)
	}
	stemCache.Lock()
	if len(stemCache.m) >= stemCacheMax {
		clear(stemCache.m)
	}
	stemCache.m[strings.Clone(lower)] = t
	stemCache.Unlock()
	return t
}

func hasUpper(w string) bool {
	for _, r := range w {
		if r >= utf8.RuneSelf || ('A' <= r && r <= 'Z') {
			return true // non-ASCII: let strings.ToLower decide
		}
	}
	return false
}

// indexCell is one row of knowledge_postings before it is written.
type indexCell struct {
	term      string
	tid       int32 // term's index in its docTerms' dict
	block     int
	maxWeight uint16
	n         int
	postings  []byte
}

// docTerms is a document's chunks split into terms before the write
// transaction: each chunk's distinct terms (as indexes into dict) with
// their frequencies, and its length in terms.
type docTerms struct {
	dict   []string
	chunks []chunkTerms
}

type chunkTerms struct {
	terms  []int32
	tf     []int32
	length int
}

// splitChunks splits each chunk's context and text into terms.
func splitChunks(chunks []KnowledgeChunk) docTerms {
	sp := newTermSplitter()
	d := docTerms{chunks: make([]chunkTerms, len(chunks))}
	ids := map[string]int32{}
	at := map[int32]int{}
	var ts []string
	for i, c := range chunks {
		ts = sp.terms(ts[:0], c.Context)
		ts = sp.terms(ts, c.Text)
		clear(at)
		ct := chunkTerms{length: len(ts)}
		for _, t := range ts {
			id, ok := ids[t]
			if !ok {
				id = int32(len(d.dict))
				ids[t] = id
				d.dict = append(d.dict, t)
			}
			if j, ok := at[id]; ok {
				ct.tf[j]++
				continue
			}
			at[id] = len(ct.terms)
			ct.terms = append(ct.terms, id)
			ct.tf = append(ct.tf, 1)
		}
		d.chunks[i] = ct
	}
	return d
}

// buildCells makes a document's cells from its terms and chunk ids
// (ascending, in chunk order). Each block of cellChunks chunks gets one
// cell per term found in it, plus a "" cell counting its chunks.
// Postings are (chunk id delta as uvarint, weight as 2 bytes), by chunk id.
func buildCells(d docTerms, ids []int64) []indexCell {
	var out []indexCell
	at := make([]int32, len(d.dict)) // a term's cell in out, +1 (0: none yet)
	prev := make([]int64, len(d.dict))
	for b := 0; b*cellChunks < len(d.chunks); b++ {
		lo, hi := b*cellChunks, min((b+1)*cellChunks, len(d.chunks))
		first := len(out)
		out = append(out, indexCell{term: "", block: b, n: hi - lo, postings: []byte{}})
		for i := lo; i < hi; i++ {
			ct := d.chunks[i]
			for j, t := range ct.terms {
				if at[t] == 0 {
					out = append(out, indexCell{term: d.dict[t], tid: t, block: b})
					at[t], prev[t] = int32(len(out)), 0
				}
				c := &out[at[t]-1]
				w := termWeight(int(ct.tf[j]), ct.length)
				c.postings = binary.AppendUvarint(c.postings, uint64(ids[i]-prev[t]))
				c.postings = binary.BigEndian.AppendUint16(c.postings, w)
				prev[t] = ids[i]
				c.maxWeight = max(c.maxWeight, w)
				c.n++
			}
		}
		for _, c := range out[first+1:] {
			at[c.tid] = 0
		}
	}
	return out
}

// posting is one decoded (chunk, weight) of a cell.
type posting struct {
	chunk  int64
	weight uint16
}

// decodePostings appends a cell's postings to dst.
func decodePostings(dst []posting, b []byte) []posting {
	var id int64
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 || len(b) < n+2 {
			return dst // a damaged cell ends where it stops making sense
		}
		id += int64(d)
		dst = append(dst, posting{chunk: id, weight: binary.BigEndian.Uint16(b[n:])})
		b = b[n+2:]
	}
	return dst
}

// writeIndex writes the cells of a document whose chunks were just
// inserted (in the order of terms) in tx.
func (s *KnowledgeStore) writeIndex(ctx context.Context, tx *sql.Tx, orgID int64, docID string, terms docTerms) error {
	if len(terms.chunks) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM knowledge_chunks WHERE document_id = $1 ORDER BY id`, docID)
	if err != nil {
		return translate(err)
	}
	ids := make([]int64, 0, len(terms.chunks))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return translate(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return translate(err)
	}
	if len(ids) != len(terms.chunks) {
		return fmt.Errorf("knowledge index: %d chunks stored, %d split", len(ids), len(terms.chunks))
	}
	cells := buildCells(terms, ids)
	// In index order: the inserts then sweep the term index once instead
	// of landing on random pages.
	slices.SortFunc(cells, func(a, b indexCell) int {
		return cmp.Or(strings.Compare(a.term, b.term), cmp.Compare(a.block, b.block))
	})
	if s.db.Dialect == migrations.Postgres {
		// One statement of arrays: a round trip and a parse for the whole
		// document.
		ts, blocks, maxes, ns, ps := make([]string, len(cells)), make([]int32, len(cells)), make([]int32, len(cells)), make([]int32, len(cells)), make([][]byte, len(cells))
		for i, c := range cells {
			ts[i], blocks[i], maxes[i], ns[i], ps[i] = c.term, int32(c.block), int32(c.maxWeight), int32(c.n), c.postings
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO knowledge_postings (org_id, document_id, term, block, max_weight, n, postings)
			SELECT $1, $2, * FROM unnest($3::text[], $4::int[], $5::int[], $6::int[], $7::bytea[])`, orgID, docID, ts, blocks, maxes, ns, ps)
		return translate(err)
	}
	// SQLite: many rows a statement; the full batches and the single rows
	// of the rest run prepared statements from the store's cache.
	full, one := tx.StmtContext(ctx, s.db.prepared(ctx, insertCells(cellBatch))), tx.StmtContext(ctx, s.db.prepared(ctx, insertCells(1)))
	defer full.Close()
	defer one.Close()
	args := make([]any, 0, 2+5*cellBatch)
	for i := 0; i < len(cells); {
		st, n := full, cellBatch
		if len(cells)-i < cellBatch {
			st, n = one, 1
		}
		args = append(args[:0], orgID, docID)
		for _, c := range cells[i : i+n] {
			args = append(args, c.term, c.block, c.maxWeight, c.n, c.postings)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return translate(err)
		}
		i += n
	}
	return nil
}

// cellBatch is how many cells one SQLite INSERT writes.
const cellBatch = 200

// insertCells is a SQLite INSERT of n cells of one document (?1 org, ?2
// document). Its parameters are positional: binding n named ones ($3...)
// looks each name up in a list, n² work that was most of ingestion.
func insertCells(n int) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO knowledge_postings (org_id, document_id, term, block, max_weight, n, postings) VALUES `)
	for j := range n {
		if j > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?1, ?2, ?, ?, ?, ?, ?)")
	}
	return q.String()
}
