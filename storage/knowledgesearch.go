package storage

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/voiced/voiced/storage/migrations"
)

// KnowledgeQuery is a BM25 search over an org's chunks.
type KnowledgeQuery struct {
	Text  string
	Limit int
	// BaseIDs and DocumentIDs, when not empty, restrict the search to
	// documents in any of those bases / to those documents.
	BaseIDs, DocumentIDs []string
}

// KnowledgeHit is one chunk found by a search.
type KnowledgeHit struct {
	ChunkID                  int64
	DocumentID, DocumentName string
	Position                 int
	Context, Text            string
	// Score is the chunk's BM25 score, higher for better matches. The same
	// corpus scores the same on both databases; scores of different orgs
	// (or of one org as its corpus changes) differ with idf.
	Score float64
}

// maxQueryTerms bounds the words of a query.
const maxQueryTerms = 32

// QueryTerms splits a free-text query into the lowercase words a search
// matches (letters and digits; everything else separates), at most
// maxQueryTerms, without repeats.
func QueryTerms(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		if !seen[w] && !stopWords[w] && len(out) < maxQueryTerms {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// stopWords are dropped from queries and from the index: words so common
// they tell chunks apart only by length. It is PostgreSQL's english stop
// list.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
		her hers herself it its itself they them their theirs themselves what which who whom this that these those am is are was were
		be been being have has had having do does did doing a an the and but if or because as until while of at by for with about
		against between into through during before after above below to from up down in out on off over under again further then once
		here there when where why how all any both each few more most other some such no nor not only own same so than too very s t
		can will just don should now`) {
		m[w] = true
	}
	return m
}()

// TextHash is the hex SHA-256 of text with line endings and surrounding
// space normalized: two uploads of the same text hash alike.
func TextHash(text string) string {
	t := strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
	if t == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}

// Search ranks the org's chunks against q by BM25 (any query word may
// match; rarer words and shorter chunks weigh more), best first, ties by
// chunk id. A query with no words finds nothing.
//
// The ranking is exact top-k over the term index (knowledgeindex.go):
// every cell (a term in a block of a document's chunks) carries its best
// weight, so each block of chunks has an upper bound on any of its chunks'
// scores. Blocks are read best bound first, a batch at a time, and reading
// stops when the limit-th best score found is above the next block's
// bound: no unread chunk can rank above it. Filters drop blocks of other
// documents before anything is read, so a small base in a big org reads
// only its own blocks.
func (s *KnowledgeStore) Search(ctx context.Context, orgID int64, q KnowledgeQuery) ([]KnowledgeHit, error) {
	return s.search(ctx, orgID, q, true)
}

// search is Search; without prune it reads every block (the tests'
// reference for the pruned ranking).
func (s *KnowledgeStore) search(ctx context.Context, orgID int64, q KnowledgeQuery, prune bool) ([]KnowledgeHit, error) {
	terms := searchTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	scope, err := s.searchScope(ctx, orgID, q)
	if err != nil || (scope != nil && len(scope) == 0) {
		return nil, err
	}
	blocks, err := s.searchBlocks(ctx, orgID, terms, scope)
	if err != nil {
		return nil, err
	}
	var top []scoredChunk
	var acc blockScores
	for i, batch := 0, 8; i < len(blocks); batch = min(2*batch, 256) {
		j := i
		var ids []int64
		for ; j < len(blocks) && j-i < batch && !(prune && beaten(top, q.Limit, blocks[j].bound)); j++ {
			for _, c := range blocks[j].cells {
				ids = append(ids, c.id)
			}
		}
		if j == i {
			break
		}
		postings, err := s.cellPostings(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, b := range blocks[i:j] {
			top = acc.score(b, postings, top, q.Limit)
		}
		i = j
	}
	return s.searchHits(ctx, orgID, top)
}

// blockScores sums the BM25 scores of one block's chunks. A block's
// chunks were stored together, so their ids mostly fall in a narrow
// range: scores are summed in a slice indexed by id from the block's
// lowest, which is several times faster than a map over the hundreds of
// thousands of postings a query of common words reads (a map keeps the
// rare block whose ids are spread out by other documents' inserts).
type blockScores struct {
	ps     []posting
	parts  []chunkPart
	dense  []float64
	sparse map[int64]float64
}

// chunkPart is one posting's share of its chunk's score.
type chunkPart struct {
	chunk int64
	score float64
}

// score adds the chunks of block b (postings by cell id) to top.
func (a *blockScores) score(b searchBlock, postings map[int64][]byte, top []scoredChunk, limit int) []scoredChunk {
	// Cells in term order, so a chunk's score is summed in one order on
	// both databases (bit-equal scores for equal inputs).
	a.parts = a.parts[:0]
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range b.cells {
		a.ps = decodePostings(a.ps[:0], postings[c.id])
		for _, p := range a.ps {
			a.parts = append(a.parts, chunkPart{p.chunk, c.idf * float64(p.weight) / weightScale})
			lo, hi = min(lo, p.chunk), max(hi, p.chunk)
		}
	}
	if len(a.parts) == 0 {
		return top
	}
	if span := hi - lo + 1; span <= int64(4*len(a.parts)+4096) {
		if int64(cap(a.dense)) < span {
			a.dense = make([]float64, span)
		}
		d := a.dense[:span]
		clear(d)
		for _, p := range a.parts {
			d[p.chunk-lo] += p.score
		}
		for i, sc := range d {
			if sc > 0 && !beaten(top, limit, sc) {
				top = addTop(top, limit, scoredChunk{id: lo + int64(i), score: sc})
			}
		}
		return top
	}
	if a.sparse == nil {
		a.sparse = map[int64]float64{}
	}
	clear(a.sparse)
	for _, p := range a.parts {
		a.sparse[p.chunk] += p.score
	}
	for id, sc := range a.sparse {
		top = addTop(top, limit, scoredChunk{id: id, score: sc})
	}
	return top
}

// searchTerms is the index terms of a query's words, without repeats.
func searchTerms(q string) []string {
	sp := newTermSplitter()
	var out []string
	for _, w := range QueryTerms(q) {
		if t := sp.term(w); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// scoredChunk is a chunk and its BM25 score.
type scoredChunk struct {
	id    int64
	score float64
}

// beaten says whether a block whose chunks score at most bound cannot
// enter top (already full with limit chunks). A chunk that ties the last
// can (by a lower id), so the pruned ranking is exactly the full one.
func beaten(top []scoredChunk, limit int, bound float64) bool {
	return len(top) == limit && bound < top[limit-1].score
}

// addTop inserts c into top (best first, at most limit long).
func addTop(top []scoredChunk, limit int, c scoredChunk) []scoredChunk {
	i, _ := slices.BinarySearchFunc(top, c, func(a, b scoredChunk) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.id, b.id)
	})
	if i >= limit {
		return top
	}
	if len(top) == limit {
		top = top[:limit-1]
	}
	return slices.Insert(top, i, c)
}

// searchCell is one cell of a block: its row id, its term's idf and its
// best weight.
type searchCell struct {
	id        int64
	term      string
	idf       float64
	maxWeight int64
}

// searchBlock is one block of a document's chunks that holds a query term.
type searchBlock struct {
	doc   string
	block int64
	bound float64 // the best score any of its chunks can have
	cells []searchCell
}

const searchHeaders = `SELECT id, term, document_id, block, max_weight, n FROM knowledge_postings WHERE org_id = $1 AND term IN (`

// searchBlocks reads the headers of the org's cells for terms (and the
// chunk-counting "" cells, for idf), and returns the blocks of documents
// in scope (nil: all) that hold a term, best bound first.
func (s *KnowledgeStore) searchBlocks(ctx context.Context, orgID int64, terms []string, scope map[string]bool) ([]searchBlock, error) {
	var q strings.Builder
	q.WriteString(searchHeaders)
	args := []any{orgID, ""}
	q.WriteString("$2")
	for _, t := range terms {
		args = append(args, t)
		fmt.Fprintf(&q, ", $%d", len(args))
	}
	q.WriteString(")")
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	type header struct {
		id, block int64
		term, doc string
		maxWeight int64
		n         int64
	}
	var hs []header
	var chunks int64
	df := map[string]int64{}
	for rows.Next() {
		var h header
		if err := rows.Scan(&h.id, &h.term, &h.doc, &h.block, &h.maxWeight, &h.n); err != nil {
			return nil, translate(err)
		}
		if h.term == "" {
			chunks += h.n
			continue
		}
		df[h.term] += h.n
		if scope == nil || scope[h.doc] {
			hs = append(hs, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	type key struct {
		doc   string
		block int64
	}
	at := map[key]int{}
	var out []searchBlock
	for _, h := range hs {
		k := key{h.doc, h.block}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, searchBlock{doc: h.doc, block: h.block})
		}
		out[i].cells = append(out[i].cells, searchCell{id: h.id, term: h.term, idf: idf(chunks, df[h.term]), maxWeight: h.maxWeight})
	}
	for i := range out {
		b := &out[i]
		// Terms in one order on both databases: a chunk's score is summed
		// in that order, so equal inputs give bit-equal scores.
		slices.SortFunc(b.cells, func(x, y searchCell) int { return strings.Compare(x.term, y.term) })
		for _, c := range b.cells {
			b.bound += c.idf * float64(c.maxWeight) / weightScale
		}
	}
	slices.SortFunc(out, func(x, y searchBlock) int {
		if x.bound != y.bound {
			if x.bound > y.bound {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(x.doc, y.doc), cmp.Compare(x.block, y.block))
	})
	return out, nil
}

// cellPostings reads the postings of cells by row id.
func (s *KnowledgeStore) cellPostings(ctx context.Context, ids []int64) (map[int64][]byte, error) {
	q := `SELECT id, postings FROM knowledge_postings WHERE id IN (SELECT value FROM json_each($1))`
	if s.db.Dialect == migrations.Postgres {
		q = `SELECT id, postings FROM knowledge_postings WHERE id = ANY($1::bigint[])`
	}
	rows, err := s.db.QueryContext(ctx, q, s.idsArg(ids))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[int64][]byte, len(ids))
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return nil, translate(err)
		}
		out[id] = b
	}
	return out, translate(rows.Err())
}

// idsArg passes a list of ids as one parameter: a bigint[] to
// PostgreSQL, a JSON array to SQLite's json_each.
func (s *KnowledgeStore) idsArg(ids []int64) any {
	if s.db.Dialect == migrations.Postgres {
		return ids
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// searchHits loads the chunks of top, in its order. A chunk deleted since
// its postings were read is left out.
func (s *KnowledgeStore) searchHits(ctx context.Context, orgID int64, top []scoredChunk) ([]KnowledgeHit, error) {
	if len(top) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(top))
	for i, c := range top {
		ids[i] = c.id
	}
	q := `SELECT c.id, c.document_id, d.name, c.position, c.context, c.text
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.org_id = $1 AND c.id IN (SELECT value FROM json_each($2))`
	if s.db.Dialect == migrations.Postgres {
		q = `SELECT c.id, c.document_id, d.name, c.position, c.context, c.text
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.org_id = $1 AND c.id = ANY($2::bigint[])`
	}
	rows, err := s.db.QueryContext(ctx, q, orgID, s.idsArg(ids))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	found := map[int64]KnowledgeHit{}
	for rows.Next() {
		var h KnowledgeHit
		if err := rows.Scan(&h.ChunkID, &h.DocumentID, &h.DocumentName, &h.Position, &h.Context, &h.Text); err != nil {
			return nil, translate(err)
		}
		found[h.ChunkID] = h
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	out := make([]KnowledgeHit, 0, len(top))
	for _, c := range top {
		if h, ok := found[c.id]; ok {
			h.Score = c.score
			out = append(out, h)
		}
	}
	return out, nil
}

// searchScope is the set of documents a filtered query may return (nil:
// no filter): those of DocumentIDs, and of the org's bases in BaseIDs.
func (s *KnowledgeStore) searchScope(ctx context.Context, orgID int64, q KnowledgeQuery) (map[string]bool, error) {
	if len(q.BaseIDs) == 0 && len(q.DocumentIDs) == 0 {
		return nil, nil
	}
	var docs map[string]bool
	if len(q.DocumentIDs) > 0 {
		docs = map[string]bool{}
		for _, id := range q.DocumentIDs {
			docs[id] = true
		}
	}
	if len(q.BaseIDs) == 0 {
		return docs, nil
	}
	query := `SELECT m.document_id FROM knowledge_base_documents m JOIN knowledge_bases b ON b.id = m.base_id
		WHERE b.org_id = $1 AND m.base_id IN (SELECT value FROM json_each($2))`
	if s.db.Dialect == migrations.Postgres {
		query = `SELECT m.document_id FROM knowledge_base_documents m JOIN knowledge_bases b ON b.id = m.base_id
		WHERE b.org_id = $1 AND m.base_id = ANY($2::text[])`
	}
	var arg any = q.BaseIDs
	if s.db.Dialect != migrations.Postgres {
		b, _ := json.Marshal(q.BaseIDs)
		arg = string(b)
	}
	rows, err := s.db.QueryContext(ctx, query, orgID, arg)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	inBases := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err)
		}
		if docs == nil || docs[id] {
			inBases[id] = true
		}
	}
	return inBases, translate(rows.Err())
}
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
